"""`escrag reproduce MODEL [--into DIR]`: rebuild a registered policy from its recorded inputs and compare.

MODEL is `models:/escrag-policy/VERSION`, `models:/escrag-policy@ALIAS` or an MLflow run id. The
reproduction checks out the recorded git commit in a new worktree, restores the data and the upstream
stage outputs at their recorded md5s (the LanceDB index comes back at its table version), re-runs
base_model, sft, grpo and evaluate there with a tracking store of its own, then compares the weights
(sha256 and the largest difference), every evaluation metric and the lineage tags. Exit 0 when all match,
1 when something differs, 2 for a MODEL or --into that cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flows.cli_support import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, project_from

MAX_METRIC_LINES = 12  # the evaluation metrics are many; the text report shows the mismatches and a count


def render(result: dict) -> str:
    checks = result["checks"]
    lines = [f"reproduction of commit {result['commit'][:12]} in {result['worktree']} ({result['seconds']:.0f} s)",
             f"re-ran: {', '.join(result['rerun'])}"]  # fmt: skip
    shown = [c for c in checks if not c["name"].startswith("eval.") or not c["matched"]]
    for check in shown[: MAX_METRIC_LINES * 4]:
        mark = "MATCH " if check["matched"] else "DIFFER"
        lines.append(f"{mark} {check['name']}: registered {check['registered']}, reproduced {check['reproduced']}")
    metrics = [c for c in checks if c["name"].startswith("eval.")]
    lines.append(f"evaluation metrics: {sum(c['matched'] for c in metrics)} of {len(metrics)} identical")
    lines += [f"note: {note}" for note in result["notes"]]
    lines.append("REPRODUCED: everything matched" if result["matched"] else "NOT REPRODUCED: see DIFFER lines")
    return "\n".join(lines)


def cmd_reproduce(args: argparse.Namespace) -> int:
    from models.policy_training import largest_weight_difference
    from tasks.registry import UnknownModelError, downloaded, run_of
    from tasks.reproduce import ReproductionError, reproduce
    from tasks.tracking import configure

    project = project_from(args)
    configure(project)
    try:
        run, version = run_of(args.model)
    except UnknownModelError as error:
        print(f"escrag reproduce: MODEL {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    into = (args.into or project.state / "reproduce" / (version or run.info.run_id)).resolve()

    def weight_difference(policy: Path) -> float | None:
        if version is None:
            return None
        with downloaded(args.model) as registered:
            return largest_weight_difference(registered, policy)

    try:
        result = reproduce(project, run, into, weight_difference, progress=lambda m: print(m, file=sys.stderr))
    except ReproductionError as error:
        print(f"escrag reproduce: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT if "--into" in str(error) else EXIT_FAILED
    report = result.as_dict()
    print(json.dumps(report, indent=2) if args.json else render(report))
    return EXIT_OK if result.matched else EXIT_FAILED


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "reproduce",
        help="rebuild a registered model from its recorded inputs and compare weights, metrics and lineage",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help="models:/escrag-policy/VERSION, models:/escrag-policy@ALIAS or a run id")
    parser.add_argument("--into", type=Path, help="a new folder for the worktree (default: .escrag/reproduce/VERSION)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.set_defaults(func=cmd_reproduce)
