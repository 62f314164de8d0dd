"""One promotion at a time, across processes and machines.

With a Prefect server configured, a global concurrency limit of one slot (`escrag-promotion`) serialises
every process that can reach the server. Without one, an exclusive file lock beside the project's MLflow
store serialises the processes of this machine (which is then the only one using that store).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from tasks.events import server_configured
from tasks.file_lock import LockBusy, exclusive
from tasks.project import Project

logger = logging.getLogger(__name__)

PROMOTION_LIMIT = "escrag-promotion"
LOCK_TIMEOUT_S = 900.0  # a promotion re-evaluates a champion: minutes on a CPU


class PromotionBusy(TimeoutError):
    """Another promotion held the lock for longer than the timeout."""


@contextlib.contextmanager
def promotion_lock(project: Project, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[str]:
    """Held for the whole promotion: from reading the champion to moving the alias and writing history."""
    if server_configured():
        with _prefect_slot(timeout_s):
            yield f"prefect global concurrency limit {PROMOTION_LIMIT!r}"
    else:
        with _file_lock(project, timeout_s) as path:
            yield f"file lock {path}"


@contextlib.contextmanager
def _prefect_slot(timeout_s: float) -> Iterator[None]:
    from prefect.client.orchestration import get_client
    from prefect.concurrency.sync import concurrency

    with get_client(sync_client=True) as prefect:
        prefect.upsert_global_concurrency_limit_by_name(PROMOTION_LIMIT, limit=1)
    try:
        with concurrency(PROMOTION_LIMIT, occupy=1, timeout_seconds=timeout_s, strict=True):
            yield
    except TimeoutError as exc:
        raise PromotionBusy(f"another promotion held {PROMOTION_LIMIT!r} for over {timeout_s:.0f} s") from exc


@contextlib.contextmanager
def _file_lock(project: Project, timeout_s: float) -> Iterator[str]:
    path = project.root / ".mlflow" / "promotion.lock"  # beside the store it guards
    try:
        with exclusive(path, timeout_s, "promotion"):
            yield str(path)
    except LockBusy as exc:
        raise PromotionBusy(f"{exc} (waited {timeout_s:.0f} s)") from None
