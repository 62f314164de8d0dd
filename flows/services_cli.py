"""`escrag services` (start/stop/status the scaled-out services on loopback) and `escrag worker prepare`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_FAILED, EXIT_OK, project_from

DEFAULT_STATE = ".services"  # under the project; ignored by git


def add_parser(sub: Any) -> None:
    services = sub.add_parser(
        "services",
        help="start, stop or list a Prefect server, an MLflow server and cpu/gpu workers on loopback",
        description="One machine's stand-in for a team's cluster (docs/orchestration.md): a Prefect server, an "
        "MLflow tracking server (SQLite, served artifacts), work pools `cpu` and `gpu` (process) and one worker "
        "per pool, each in its own clone of the project's git remote. Then: `prefect --no-prompt deploy --all`.",
    )
    verbs = services.add_subparsers(dest="verb", required=True, metavar="VERB")
    start = verbs.add_parser("start", help="start everything and print the environment to use it")
    start.add_argument("--state-dir", type=Path, help=f"where logs, databases and clones go (default: {DEFAULT_STATE})")
    start.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    start.add_argument("--git-url", help="what workers clone (default: the project's origin, else the project)")
    start.add_argument("--dvc-remote", help="the DVC remote URL workers use (default: the project's default remote)")
    start.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for each server (default: 120)")
    start.set_defaults(func=_start)
    for verb, func, text in (("stop", _stop, "stop every process `start` started, by pid"),
                             ("status", _status, "list the processes and whether they run")):  # fmt: skip
        parser = verbs.add_parser(verb, help=text)
        parser.add_argument("--state-dir", type=Path, help=f"default: {DEFAULT_STATE}")
        parser.set_defaults(func=func)

    worker = sub.add_parser("worker", help="what a deployment's pull step runs on a worker")
    steps = worker.add_subparsers(dest="verb", required=True, metavar="VERB")
    prepare = steps.add_parser(
        "prepare",
        help="clone ESCRAG_GIT_URL into ESCRAG_WORKER_CLONE if needed, check out the run's git_rev, print the path",
    )
    prepare.set_defaults(func=_prepare)


def _state_dir(args: argparse.Namespace) -> Path:
    if args.state_dir:
        return args.state_dir.resolve()

    return project_from(args).root / DEFAULT_STATE


def _start(args: argparse.Namespace) -> int:
    from tasks import services

    project = project_from(args)
    try:
        started = services.start(project.root, _state_dir(args), args.host, args.timeout, args.git_url, args.dvc_remote)
    except services.ServiceError as exc:
        print(f"escrag services: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for process in started.processes:
        print(f"started {process.name:15} pid {process.pid:<8} {process.url or ''}", file=sys.stderr)
    print(f"# state: {started.state_dir}; stop with: escrag services stop", file=sys.stderr)
    for key, value in started.environment().items():
        print(f"export {key}={value}")
    return EXIT_OK


def _stop(args: argparse.Namespace) -> int:
    from tasks import services

    results = services.stop(_state_dir(args))
    for name, pid, stopped in results:
        print(f"{name:15} pid {pid:<8} {'stopped' if stopped else 'STILL RUNNING'}")
    return EXIT_OK if all(stopped for _, _, stopped in results) else EXIT_FAILED


def _status(args: argparse.Namespace) -> int:
    from tasks import services

    rows = services.status(_state_dir(args))
    print(json.dumps([{"name": p.name, "pid": p.pid, "running": alive, "url": p.url, "log": p.log}
                      for p, alive in rows], indent=2))  # fmt: skip
    return EXIT_OK if all(alive for _, alive in rows) else EXIT_FAILED


def _prepare(args: argparse.Namespace) -> int:
    from tasks.worker_clone import prepare

    folder, _ = prepare()
    print(folder)  # the pull step's output: prefect.yaml passes it to set_working_directory
    return 0
