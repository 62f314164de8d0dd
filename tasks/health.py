"""Whether an HTTP service answers its health URL, and whether a process still runs: one home for the probe and
the wait that the service start-up, the tracking preflight and the fault suite's tracking server all need, and for
the liveness check of service processes and of the process that opened an MLflow run (tasks.tracking)."""

from __future__ import annotations

import contextlib
import os
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.5


def probe(url: str, timeout_s: float) -> None:
    """GET `url` and read the answer; raises OSError (urllib's URLError is one) when nothing answers."""
    with urllib.request.urlopen(url, timeout=timeout_s) as answer:
        answer.read()


def wait_until_answers(url: str, timeout_s: float, alive: Callable[[], bool] = lambda: True) -> bool:
    """True once `url` answers; False when `timeout_s` passes first or `alive()` turns false (the process that
    should answer has exited, so waiting longer is pointless)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and alive():
        try:
            probe(url, timeout_s=2)
            return True
        except OSError:
            time.sleep(POLL_S)
    return False


def is_running(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped by its parent) counts as stopped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True
