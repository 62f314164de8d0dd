"""What every `escrag` sub-command shares: exit codes, finding the project and checking the paths it writes
to (no heavy imports here)."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path

from tasks.project import Project, apply_service_environment

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BUSY = 75  # sysexits EX_TEMPFAIL: another process holds the project; try again later
EXIT_NO_SPACE = 74  # sysexits EX_IOERR: the disk filled while escrag wrote (nothing half-written is recorded)
EXIT_UNAVAILABLE = 69  # sysexits EX_UNAVAILABLE: a service the command needs (the MLflow server) does not answer


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
