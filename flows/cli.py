"""The `escrag` command line. Heavy libraries are imported inside commands so `--help` stays instant."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from flows.cli_support import (
    EXIT_BAD_INPUT,
    EXIT_BUSY,
    EXIT_FAILED,
    EXIT_NO_SPACE,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    ArgumentRefused,
    disk_full,
    project_from,
    setup_logging,
)
from models.config import ParamsError
from tasks.build_stages import DataValidationError
from tasks.dvc_ops import DataRestoreError
from tasks.file_lock import LockBusy, exclusive
from tasks.jsonl_reader import DataError
from tasks.project import Project, ProjectNotFoundError
from tasks.registry import UnknownModelError
from tasks.tracking import TrackingUnreachable, check_reachable

RUN_LOCK = "run.lock"  # under Project.state

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BUSY",
    "EXIT_FAILED",
    "EXIT_NO_SPACE",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "build_parser",
    "main",
    "project_from",
]


def use_recipe(project: Project, name: str, *, runs_here: bool) -> None:
    """Write recipe NAME into params.yaml and say what changed. A bad value, or with `runs_here` a device
    this machine lacks, is refused before params.yaml is touched."""
    from models.compute import resolve_compute
    from tasks.recipes import apply_recipe, recipe_path

    path = recipe_path(project.root, name)
    check = (lambda params: resolve_compute(params.compute)) if runs_here else None
    changed = apply_recipe(project.root / "params.yaml", path, accept=check)
    print(
        f"recipe {path.name}: {len(changed)} setting(s) changed in params.yaml{': ' if changed else ''}"
        f"{', '.join(changed)}",
        file=sys.stderr,
    )


def cmd_run(args: argparse.Namespace) -> int:
    project = project_from(args)
    # One run per working tree: two would share data/, artifacts/, dvc.lock and the index table.
    with exclusive(project.state / RUN_LOCK, args.wait, f"escrag run in {project.root}"):
        if args.recipe:
            use_recipe(project, args.recipe, runs_here=True)
        project.params  # noqa: B018 - fail on bad params before starting Prefect
        project.compute  # noqa: B018 - and on a device this machine lacks
        from flows.retrain import retrain

        decision = retrain(project_dir=str(project.root))
    print(decision.summary())
    return EXIT_OK


def cmd_recipe(args: argparse.Namespace) -> int:
    use_recipe(project_from(args), args.name, runs_here=False)
    return EXIT_OK


def cmd_stage(args: argparse.Namespace) -> int:
    project = project_from(args)
    project.params  # noqa: B018
    project.compute  # noqa: B018
    check_reachable(project)  # `dvc repro` runs stages one by one: each fails before its work, not after
    from models.compute import is_main_process
    from tasks.dvc_ops import restore_bundled_data
    from tasks.stages import STAGES

    # A fresh clone: the same first step as `escrag run`. Under `accelerate launch` rank 0 alone writes.
    if is_main_process() and restore_bundled_data(project.root):
        logging.getLogger("escrag").info("data/ restored to the version in data.dvc")
    result = STAGES[args.name](project)
    logging.getLogger("escrag").info("stage %s: %s", args.name, json.dumps(result, default=str))
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from flows.status import project_status, render_status

    status = project_status(project_from(args))
    print(json.dumps(status, indent=2) if args.json else render_status(status))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="escrag",
        description="ESCRAG-R1 as an auditable MLOps workflow: versioned data, a retrieval index, "
        "reward models, GRPO training, evaluation and gated promotion in the MLflow registry.",
    )
    parser.add_argument(
        "--project",
        type=Path,
        default=None,
        help="project folder (default: $ESCRAG_PROJECT or the nearest folder with dvc.yaml)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the retrain flow: validate, version, train, evaluate, promote")
    run.add_argument(
        "--recipe",
        metavar="NAME",
        help="first write recipes/NAME.yaml into params.yaml (gpu: a bf16 GPU-sized run); default: params.yaml as is",
    )
    run.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help=f"when another run holds this project, wait up to SECONDS for it (default 0: refuse at once, exit "
        f"{EXIT_BUSY})",
    )
    run.set_defaults(func=cmd_run)

    recipe = sub.add_parser(
        "recipe",
        help="write recipes/NAME.yaml into params.yaml, so `dvc repro` re-runs the stages it changes",
        description="Recipes are overlays of params.yaml (recipes/*.yaml). Applying one writes its values into "
        "params.yaml, comments kept, after validating the result; `git checkout params.yaml` undoes it.",
    )
    recipe.add_argument("name", help="a recipe name under recipes/ (e.g. gpu) or a path to a .yaml file")
    recipe.set_defaults(func=cmd_recipe)

    from tasks.stages import PIPELINE_ORDER

    stage = sub.add_parser(
        "stage",
        help="run one dvc.yaml stage (what `dvc repro` calls)",
        description="Run one dvc.yaml stage in this process. The training stages (reward_model, sft, grpo) "
        "also run under `accelerate launch [--config_file configs/accelerate/FILE.yaml] -m flows.cli stage NAME`: "
        "every rank trains, rank 0 alone logs to MLflow, writes outputs and registers (docs/gpu.md).",
    )
    stage.add_argument("name", choices=PIPELINE_ORDER)
    stage.set_defaults(func=cmd_stage)

    status = sub.add_parser("status", help="tracking URI, data version and the current champion")
    status.add_argument("--json", action="store_true", help="print machine-readable JSON")
    status.set_defaults(func=cmd_status)

    from flows import (
        data_cli,
        evaluate_cli,
        lineage_cli,
        preferences,
        promotion_cli,
        reproduce_cli,
        safety_cli,
        score,
        search,
        serve_cli,
        services_cli,
    )

    search.add_parser(sub)
    search.add_eval_parser(sub)
    data_cli.add_parser(sub)
    score.add_parser(sub)
    preferences.add_parser(sub)
    services_cli.add_parser(sub)
    safety_cli.add_parser(sub)
    evaluate_cli.add_parser(sub)
    promotion_cli.add_parser(sub)
    lineage_cli.add_parser(sub)
    reproduce_cli.add_parser(sub)
    serve_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        return args.func(args)
    except DataRestoreError as exc:
        print(f"escrag: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except LockBusy as exc:
        print(f"escrag: {exc}; wait for it to finish, or pass --wait SECONDS", file=sys.stderr)
        return EXIT_BUSY
    except TrackingUnreachable as exc:
        print(f"escrag: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except (
        ArgumentRefused,
        ParamsError,
        ProjectNotFoundError,
        FileNotFoundError,
        DataError,
        DataValidationError,
        UnknownModelError,
    ) as exc:
        print(f"escrag: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:
        if not disk_full(exc):
            raise
        print(
            f"escrag: no space left on device ({type(exc).__name__}: {str(exc)[:300]}). Free space and run again: "
            "the step that failed recorded nothing, and the next run redoes it",
            file=sys.stderr,
        )
        return EXIT_NO_SPACE


if __name__ == "__main__":
    sys.exit(main())
