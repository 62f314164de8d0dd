"""An exclusive lock on a file, across the processes of one machine, that says who holds it.

The holder writes its pid, host and start time into the file, so a process refused the lock can name it.
The kernel drops a flock when its holder dies (even by `kill -9`), so a crash never leaves a stale lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

POLL_S = 0.5


class LockBusy(TimeoutError):
    """Another process holds the lock (for longer than the caller would wait)."""


def holder(path: Path) -> str:
    """Who holds (or last held) the lock at `path`, in words."""
    try:
        found = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    return f"pid {found.get('pid', '?')} on {found.get('host', '?')} since {found.get('since', '?')}"


@contextlib.contextmanager
def exclusive(path: Path, timeout_s: float, what: str) -> Iterator[Path]:
    """Hold the lock on `path` for the block; wait at most `timeout_s` (0: refuse at once) for it.

    Raises LockBusy naming `what` is locked and by whom.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    with path.open("a+", encoding="utf-8") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy(f"{what} is busy: {holder(path)} holds {path}") from None
                time.sleep(POLL_S)
        try:
            handle.truncate(0)
            handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                     "since": datetime.now(UTC).isoformat(timespec="seconds")}))  # fmt: skip
            handle.flush()
            yield path
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
