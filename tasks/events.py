"""Prefect events escrag emits, so that deployment triggers can start work (see prefect.yaml)."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from tasks import git_ops

logger = logging.getLogger(__name__)

DATA_VERSIONED = "escrag.data.versioned"


def server_configured() -> bool:
    """True when `PREFECT_API_URL` names a Prefect server: events, deployments and workers exist there."""
    return bool(os.environ.get("PREFECT_API_URL"))


def data_resource(md5: str, commit: str) -> dict[str, str]:
    return {
        "prefect.resource.id": f"escrag.data.{md5}",
        "prefect.resource.name": f"data {md5[:12]}",
        "escrag.data.md5": md5,
        "escrag.git.commit": commit,
    }


def emit_data_versioned(md5: str, commit: str, counts: dict[str, int]) -> str:
    """Send `escrag.data.versioned` for data version `md5`, committed as `commit`; returns the event id.

    Sent through a client that is closed before returning, so a short-lived CLI cannot exit with the
    event still in a background queue.
    """
    from prefect.events import Event
    from prefect.events.clients import get_events_client

    event = Event(
        event=DATA_VERSIONED,
        resource=data_resource(md5, commit),
        payload={"records": counts},
    )

    async def send() -> None:
        async with get_events_client() as client:
            await client.emit(event)

    asyncio.run(send())
    logger.info("emitted %s for data %s at %s", DATA_VERSIONED, md5[:12], commit[:12])
    return str(event.id)


def announce_data_version(root: Path, md5: str, commit: str | None, counts: dict[str, int]) -> str | None:
    """With a Prefect server configured: push the data commit to the shared git remote (so a worker can
    check it out), then emit `escrag.data.versioned`. Returns the event id, or None when nothing was sent.
    A failure here never undoes the version: it is committed and pushed to DVC already."""
    if not (commit and server_configured()):
        return None
    try:
        if git_ops.has_remote(root):
            branch = git_ops.current_branch(root)
            if branch is None:
                logger.warning("detached HEAD: data commit %s not pushed; no retrain triggered", commit[:12])
                return None
            git_ops.push(root, commit, branch)
        return emit_data_versioned(md5, commit, counts)
    except Exception as exc:  # noqa: BLE001 - a git or Prefect error must not hide the committed version
        logger.warning("data version %s committed, but no retrain triggered: %s", md5[:12], exc)
        return None
