"""What every `escrag` sub-command shares: exit codes and finding the project (no heavy imports here)."""

from __future__ import annotations

import argparse

from tasks.project import Project, apply_service_environment

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def project_from(args: argparse.Namespace) -> Project:
    project = Project.discover(args.project)
    apply_service_environment(project.root)
    return project
