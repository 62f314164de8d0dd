"""What every `escrag` sub-command shares: exit codes, finding the project and checking the paths it writes
to (no heavy imports here)."""

from __future__ import annotations

import argparse
import errno
import logging
import sys
from pathlib import Path

from tasks.project import Project, apply_service_environment

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BUSY = 75  # sysexits EX_TEMPFAIL: another process holds the project; try again later
EXIT_NO_SPACE = 74  # sysexits EX_IOERR: the disk filled while escrag wrote (nothing half-written is recorded)
EXIT_UNAVAILABLE = 69  # sysexits EX_UNAVAILABLE: a service the command needs (the MLflow server) does not answer


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class ArgumentRefused(ValueError):
    """A command-line argument escrag will not act on; the message names the argument."""


def project_from(args: argparse.Namespace) -> Project:
    project = Project.discover(args.project)
    apply_service_environment(project.root)
    return project


def inside_project(project: Project, value: Path, argument: str) -> Path:
    """`value` with `..` and symlinks resolved, when that stays inside the project: the files escrag writes
    stay there (inputs it only reads, such as an ESConv folder, may live anywhere)."""
    resolved = Path(value).expanduser().resolve()
    root = project.root.resolve()
    if not resolved.is_relative_to(root):
        raise ArgumentRefused(
            f"{argument} {value}: resolves to {resolved}, outside the project {root}; escrag writes only inside "
            "its project (give a path under it)"
        )
    return resolved


def disk_full(exc: BaseException) -> bool:
    """True when `exc`, or an error it was raised from, is "no space left on device" (ENOSPC). Native writers
    (LanceDB, safetensors) report it in their message rather than as an OSError."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "errno", None) == errno.ENOSPC or "No space left on device" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _writes_to_console(handler: logging.Handler) -> bool:
    return (
        isinstance(handler, logging.StreamHandler)
        and not isinstance(handler, logging.FileHandler)
        and getattr(handler, "stream", None) not in (sys.stdout, sys.__stdout__)
    )


def setup_logging(verbose: bool = False) -> None:
    """INFO (DEBUG when `verbose`) and above, from escrag's module loggers and every library's, on stderr: once.

    Not `logging.basicConfig`: it does nothing once the root logger has a handler, and Prefect gives it one (its
    console handler, with the root at WARNING) as soon as it is loaded: in a Prefect worker's flow-run process, or
    wherever Prefect was imported first. Then every `logger.info` of tasks/ and models/ was dropped. So a console
    handler is added only where the root has none (a second one would print each line twice), and the root's level
    is only ever lowered: the flows call this too, and under `escrag -v run` it stays at DEBUG."""
    level = logging.DEBUG if verbose else logging.INFO
    root = logging.getLogger()
    if not any(_writes_to_console(handler) for handler in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    if root.level > level:
        root.setLevel(level)
