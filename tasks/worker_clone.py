"""A worker's own clone of the project, checked out at the revision its flow run asks for.

This is what the deployments' pull step runs (`escrag worker prepare`, prefect.yaml), before Prefect loads
the flow: so the flow code, the stage code and the params all come from the flow run's `git_rev`, and
nothing comes from the folder the deployment was made in.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from tasks import git_ops
from tasks.dvc_ops import default_remote_name

logger = logging.getLogger(__name__)

CLONE_ENV = "ESCRAG_WORKER_CLONE"  # this worker's clone (created on first use)
GIT_URL_ENV = "ESCRAG_GIT_URL"  # the shared git remote it is cloned from
DVC_REMOTE_ENV = "ESCRAG_DVC_REMOTE"  # this machine's URL of the shared DVC remote (written to config.local)
DEFAULT_CLONE = "~/.escrag/worker-clone"


class WorkerSetupError(RuntimeError):
    """The worker cannot prepare its clone: names the setting to fix."""


def clone_dir() -> Path:
    return Path(os.environ.get(CLONE_ENV) or DEFAULT_CLONE).expanduser().resolve()


def ensure_clone(folder: Path) -> Path:
    """Clone `ESCRAG_GIT_URL` into `folder` unless it is a clone already; point DVC at the shared remote."""
    if not (folder / ".git").exists():
        url = os.environ.get(GIT_URL_ENV)
        if not url:
            raise WorkerSetupError(f"{folder} is not a git clone and {GIT_URL_ENV} is not set: nothing to clone")
        folder.parent.mkdir(parents=True, exist_ok=True)
        git_ops.git(folder.parent, "clone", "--quiet", url, str(folder))
        logger.info("cloned %s into %s", url, folder)
    if remote_url := os.environ.get(DVC_REMOTE_ENV):
        _set_dvc_remote(folder, remote_url)
    return folder


def _set_dvc_remote(folder: Path, url: str) -> None:
    """The default DVC remote's URL for this machine, in `.dvc/config.local` (untracked, per machine)."""
    name = default_remote_name(folder)
    local = folder / ".dvc" / "config.local"
    local.write_text(f"['remote \"{name}\"']\n    url = {url}\n", encoding="utf-8")


def flow_run_parameter(name: str) -> str | None:
    """A parameter of the flow run this process belongs to (`PREFECT__FLOW_RUN_ID`), or None."""
    run_id = os.environ.get("PREFECT__FLOW_RUN_ID")
    if not run_id:
        return None
    from uuid import UUID

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(run_id)).parameters.get(name)


def prepare(folder: Path | None = None) -> tuple[Path, str]:
    """Clone if needed, fetch, and check out the flow run's `git_rev` (default: the remote's default branch)."""
    folder = ensure_clone(folder or clone_dir())
    git_ops.fetch(folder)
    rev = flow_run_parameter("git_rev") or git_ops.default_branch_head(folder)
    commit = git_ops.checkout_detached(folder, rev)
    logger.info("worker clone %s at %s", folder, commit[:12])
    return folder, commit
