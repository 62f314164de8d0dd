"""The audit trail of the `champion` alias: one MLflow run per decision, in the tracking store.

Each entry is a run of the `escrag-promotions` experiment, tagged with the time, action, from and to
versions, decision, reason, who (user and host), the run that evaluated the candidate and whether the
safety gate ran. The run is opened before the alias moves and finished after, so an entry that is not
FINISHED marks an attempt that did not complete; `read_history` lists finished entries only.
"""

from __future__ import annotations

import contextlib
import getpass
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from tasks.project import Project
from tasks.tracking import HISTORY_EXPERIMENT, POLICY_MODEL, client, configure, ensure_experiment

TAG = "history."
MAX_TAG_CHARS = 5000


@dataclass(frozen=True)
class Entry:
    """One promotion decision or alias move."""

    action: str  # promote | rollback
    decision: str  # promoted | rejected | rolled back
    from_version: str
    to_version: str
    reason: str
    evaluated_by: str = ""  # the MLflow run whose evaluation decided
    safety_gate: str = "ran"  # ran | skipped (--skip-safety-gate) | n/a
    model: str = POLICY_MODEL
    user: str = ""
    host: str = ""
    time: str = ""
    seq: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _who() -> tuple[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        user = "unknown"
    return user, socket.gethostname()


@contextlib.contextmanager
def recording(project: Project, entry: Entry) -> Iterator[Entry]:
    """Open the entry's run, yield, and finish it; an exception marks the run FAILED (no alias move)."""
    configure(project)
    experiment_id = ensure_experiment(project, HISTORY_EXPERIMENT)
    user, host = _who()
    seq = len(read_history(project, finished_only=False)) + 1
    stamped = Entry(**{**entry.as_dict(), "user": user, "host": host, "seq": seq,
                       "time": datetime.now(UTC).isoformat(timespec="seconds")})  # fmt: skip
    tags = {f"{TAG}{k}": str(v)[:MAX_TAG_CHARS] for k, v in stamped.as_dict().items()}
    run = client().create_run(experiment_id, tags=tags, run_name=f"{entry.action} {entry.to_version}")
    try:
        yield stamped
    except BaseException:
        client().set_terminated(run.info.run_id, "FAILED")
        raise
    client().set_terminated(run.info.run_id, "FINISHED")


def _runs(project: Project) -> list[Any]:
    import mlflow

    configure(project)
    experiment = mlflow.get_experiment_by_name(HISTORY_EXPERIMENT)
    return client().search_runs([experiment.experiment_id], max_results=50_000) if experiment else []


def _entry(run: Any) -> Entry:
    tags = {k.removeprefix(TAG): v for k, v in run.data.tags.items() if k.startswith(TAG)}
    return Entry(**{k: (int(v) if k == "seq" else v) for k, v in tags.items()})


def read_history(project: Project, *, finished_only: bool = True) -> list[Entry]:
    """Every recorded entry, oldest first."""
    entries = [_entry(run) for run in _runs(project) if not finished_only or run.info.status == "FINISHED"]
    return sorted(entries, key=lambda e: (e.seq, e.time))


def interrupted(project: Project) -> list[tuple[str, Entry]]:
    """(run id, entry) of every entry still RUNNING. Under the promotion lock no promotion is under way,
    so each is one whose process died (e.g. `kill -9`) between opening the entry and finishing it."""
    return [(run.info.run_id, _entry(run)) for run in _runs(project) if run.info.status == "RUNNING"]


def settle(run_id: str, completed: bool) -> None:
    """Close an interrupted entry: FINISHED when its effect is complete, FAILED when nothing happened."""
    client().set_terminated(run_id, "FINISHED" if completed else "FAILED")


def champion_stack(entries: list[Entry]) -> list[str]:
    """The champions in order, replayed from history: a promotion pushes, a rollback pops."""
    stack: list[str] = []
    for entry in entries:
        if entry.decision == "promoted":
            stack.append(entry.to_version)
        elif entry.decision == "rolled back" and stack:
            stack.pop()
    return stack
