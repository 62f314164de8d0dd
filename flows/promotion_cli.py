"""`escrag promote` (manual promotion, rollback) and `escrag history` (every decision on `champion`)."""

from __future__ import annotations

import argparse
import json
import sys

from flows.cli_support import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, project_from

HISTORY_COLUMNS = ("seq", "time", "action", "from_version", "to_version", "decision", "user", "host",
                   "safety_gate", "evaluated_by")  # fmt: skip


def cmd_promote(args: argparse.Namespace) -> int:
    from tasks import promotion

    if bool(args.version) == bool(args.rollback):
        print("escrag promote: give either VERSION or --rollback", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.reason.strip():
        print("escrag promote: --reason must say why", file=sys.stderr)
        return EXIT_BAD_INPUT
    project = project_from(args)
    try:
        if args.rollback:
            decision = promotion.rollback(project, args.reason)
        else:
            decision = promotion.promote_manually(
                project, args.version, args.reason, skip_safety_gate=args.skip_safety_gate
            )
    except RuntimeError as exc:
        print(f"escrag promote: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(decision.summary())
    return EXIT_OK if decision.promoted else EXIT_FAILED


def render_history(entries: list[dict]) -> str:
    if not entries:
        return "no promotion decisions recorded yet"
    lines = []
    for e in entries:
        head = " ".join(f"{k}={e[k] or '-'}" for k in HISTORY_COLUMNS)
        reason = "\n".join(f"    {line}" for line in e["reason"].splitlines())
        lines.append(f"{head}\n{reason}")
    return "\n".join(lines)


def cmd_history(args: argparse.Namespace) -> int:
    from tasks.promotion_history import read_history

    entries = [e.as_dict() for e in read_history(project_from(args))]
    print(json.dumps(entries, indent=2) if args.json else render_history(entries))
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    promote = sub.add_parser(
        "promote",
        help="promote a registered policy version to champion by hand, or roll back",
        description="Move the `champion` alias of escrag-policy, one promotion at a time (a Prefect global "
        "concurrency limit when a server is configured, a file lock otherwise), recorded in the history. "
        "A manual promotion still runs the crisis-safety suite unless --skip-safety-gate is given, and "
        "the history records that it was skipped. Exit 0 when champion moved, 1 when refused.",
    )
    promote.add_argument("version", nargs="?", help="the escrag-policy version to promote")
    promote.add_argument("--reason", required=True, help="why, in words: kept in the history")
    promote.add_argument("--rollback", action="store_true", help="move champion back to the previous champion")
    promote.add_argument(
        "--skip-safety-gate", action="store_true", help="do not run the crisis-safety suite (recorded)"
    )
    promote.set_defaults(func=cmd_promote)

    history = sub.add_parser(
        "history",
        help="every promotion decision and alias move, oldest first",
        description="Lists, from the MLflow tracking store, every decision on champion: time, action, from, "
        "to, decision, reason, who (user and host), and the run that evaluated the candidate.",
    )
    history.add_argument("--json", action="store_true", help="print machine-readable JSON")
    history.set_defaults(func=cmd_history)
