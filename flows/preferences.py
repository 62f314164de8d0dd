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
import json
import sys
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, inside_project, project_from
from tasks.esc_preferences import DEFAULT_NAME, add_pairs, resolve_settings, run_builder, simulate
from tasks.project import Project


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
            out=str(inside_project(project, args.out, "--out")) if args.out else None,
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
