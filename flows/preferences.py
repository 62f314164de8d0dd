"""`escrag preferences build`: the ESC-Preference builder (client, counselor, judge) as a Prefect flow.

Situations come from the project's train dialogues (or ESConv train conversations with --esconv); each
one becomes a simulated conversation whose rated replies give preference pairs (models.roles). Backends
(models.backends): `local` runs the base model from artifacts/base_model on CPU; `http` calls an
OpenAI-compatible chat-completions server named by ESCRAG_LLM_URL / ESCRAG_LLM_MODEL / ESCRAG_LLM_API_KEY.
Answers are cached by prompt hash under artifacts/esc_preference/cache, so a rerun is free.

The pairs are written to artifacts/esc_preference/pairs.jsonl (never into data/, which is human-owned):
review them, then copy the ones you keep into data/preferences/ so that validation, DVC and the
reward_model stage pick them up.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tasks.project import Project

OUT_DIR = ("esc_preference",)


def make_backend(project: Project, kind: str):
    from models.backends import LocalChatBackend, http_backend_from_env

    cache = project.artifact(*OUT_DIR, "cache", kind)
    if kind == "http":
        return http_backend_from_env(cache_dir=cache)
    if kind == "local":
        return LocalChatBackend(project.artifact("base_model"), seed=project.params.seed, cache_dir=cache)
    raise ValueError(f"unknown backend {kind!r}; choose local or http")


def pick_situations(project: Project, count: int, esconv: Path | None) -> list[str]:
    """`count` distinct, non-empty situations of train dialogues, in a seed-stable order."""
    if esconv is not None:
        from models.esconv import read_esconv

        dialogues = [d for d in read_esconv(esconv) if d["split"] == "train"]
    else:
        from models.records import dialogues_of_split

        dialogues = dialogues_of_split(project.data, "train")
    situations = sorted({str(d.get("situation", "")).strip() for d in dialogues} - {""})
    random.Random(project.params.seed).shuffle(situations)
    return situations[:count]


def simulate(situation: str, conversation_id: str, backend: Any, turns: int, candidates: int, margin: float) -> list:
    """One simulated conversation's preference pairs (the body of the `simulate-conversation` task)."""
    from models.roles import build_preference_pairs

    return build_preference_pairs(
        situation,
        client=backend,
        counselor=backend,
        judge_backend=backend,
        conversation_id=conversation_id,
        turns=turns,
        candidates=candidates,
        min_margin=margin,
    )


def run_builder(project_dir: str, settings: dict[str, Any], simulate_fn: Callable[..., list] = simulate) -> dict:
    """Simulate one conversation per situation and write the preference pairs as JSON Lines."""
    project = Project(Path(project_dir))
    chat = make_backend(project, settings["backend"])
    esconv = settings.get("esconv")
    chosen = pick_situations(project, settings["situations"], Path(esconv) if esconv else None)
    pairs: list[dict] = []
    for situation in chosen:
        cid = "escpref-" + hashlib.sha256(situation.encode()).hexdigest()[:10]
        pairs.extend(
            simulate_fn(situation, cid, chat, settings["turns"], settings["candidates"], settings["min_margin"])
        )
    out = settings.get("out")
    path = Path(out) if out else project.artifact(*OUT_DIR, "pairs.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    return {"situations": len(chosen), "pairs": len(pairs), "out": str(path), "cache_hits": chat.cache.hits}


@functools.cache
def _prefect_flow():
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
        situations: int = 4,
        turns: int = 2,
        candidates: int = 3,
        min_margin: float = 1.0,
        esconv: str | None = None,
        out: str | None = None,
    ) -> dict[str, Any]:
        """ESC-Preference pairs from simulated conversations (client, counselor, judge)."""
        settings = {k: v for k, v in locals().items() if k != "project_dir"}
        return run_builder(project_dir, settings, simulate_task)

    return build_preferences


def __getattr__(name: str) -> Any:
    """`flows.preferences.build_preferences` is the Prefect flow (deployments can name it as an entrypoint)."""
    if name == "build_preferences":
        return _prefect_flow()
    raise AttributeError(name)


def add_parser(sub) -> None:
    parser = sub.add_parser("preferences", help="ESC-Preference data: build pairs with client/counselor/judge roles")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build", help="simulate conversations and write rated preference pairs", description=__doc__
    )
    build.add_argument("--backend", choices=("local", "http"), default="local", help="local SmolLM2 or http API")
    build.add_argument("--situations", type=int, default=4, help="conversations to simulate (default 4)")
    build.add_argument("--turns", type=int, default=2, help="counselor turns per conversation (default 2)")
    build.add_argument("--candidates", type=int, default=3, help="counselor replies rated per turn (default 3)")
    build.add_argument("--min-margin", type=float, default=1.0, help="judge score gap for a pair (default 1)")
    build.add_argument("--esconv", type=Path, help="take situations from ESConv train conversations here")
    build.add_argument("--out", type=Path, help="output JSONL (default artifacts/esc_preference/pairs.jsonl)")
    build.set_defaults(func=_run_build)


def _run_build(args) -> int:
    from flows.cli import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, project_from
    from models.backends import BackendError

    if min(args.situations, args.turns) < 1 or args.candidates < 2:
        print("escrag preferences build: --situations and --turns >= 1, --candidates >= 2", file=sys.stderr)
        return EXIT_BAD_INPUT
    project = project_from(args)
    try:
        result = _prefect_flow()(
            project_dir=str(project.root),
            backend=args.backend,
            situations=args.situations,
            turns=args.turns,
            candidates=args.candidates,
            min_margin=args.min_margin,
            esconv=str(args.esconv) if args.esconv else None,
            out=str(args.out) if args.out else None,
        )
    except BackendError as exc:
        print(f"escrag preferences build: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(result, indent=2))
    return EXIT_OK
