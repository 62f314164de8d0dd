"""MLflow wiring: the tracking store, the experiment, runs with lineage tags, and dataset inputs."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tasks.health import is_running, probe
from tasks.lineage import lineage_tags
from tasks.project import Project

logger = logging.getLogger(__name__)

EXPERIMENT = "escrag"
HISTORY_EXPERIMENT = "escrag-promotions"  # one run per promotion decision or alias move (tasks/promotion_history.py)
POLICY_MODEL = "escrag-policy"
REWARD_MODEL = "escrag-reward"
EVALUATORS_MODEL = "escrag-evaluators"
CHALLENGER, CHAMPION = "challenger", "champion"  # registry aliases, for every registered model
PID_TAG, HOST_TAG = "escrag.pid", "escrag.host"  # the process that opened a run, so a dead one's runs can be ended
# MLflow writes "View run … at: http://…" to stdout at the end of every run on a tracking server; escrag's stdout is
# for its own answers (some commands print JSON), so `configure` sets this unless the user has set it.
SUPPRESS_RUN_LINKS = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"


class TrackingUnreachable(ConnectionError):
    """The MLflow tracking server a run would log to does not answer."""


class RunTerminated(BaseException):
    """SIGTERM arrived while a tracked run was open. A BaseException, like KeyboardInterrupt, so that no
    `except Exception` in a stage swallows it on its way out to `tracked_run`, which ends the run as KILLED."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


def without_credentials(uri: str) -> str:
    """`uri` with any user:password@ removed: what may appear in a message or a log."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri  # as given: a round trip through urlunsplit would turn sqlite:////abs/path into sqlite://abs/path
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=host))


def check_reachable(project: Project, timeout_s: float = 5.0) -> None:
    """Raise TrackingUnreachable unless the tracking server answers `/health`, so a run fails before it trains
    rather than after. A store inside the project (SQLite) needs no check."""
    if not project.tracks_to_server:
        return
    base = project.tracking_uri.rstrip("/")
    try:
        probe(f"{base}/health", timeout_s)
    except OSError as exc:  # urllib's URLError included
        why = getattr(exc, "reason", None) or exc
        raise TrackingUnreachable(
            f"MLflow tracking server {without_credentials(base)} (MLFLOW_TRACKING_URI) does not answer: {why}. "
            "Nothing was run; start the server (`escrag services start`), or unset MLFLOW_TRACKING_URI to use the "
            "project's own store"
        ) from exc


def client() -> Any:
    """The MLflow client, on whatever tracking URI `configure` set."""
    from mlflow import MlflowClient

    return MlflowClient()


def configure(project: Project) -> str:
    """Point MLflow at the project's store and make sure the experiment exists; returns its id."""
    import mlflow

    user_set = "MLFLOW_TRACKING_URI" in os.environ
    os.environ.setdefault(SUPPRESS_RUN_LINKS, "true")  # read at each end_run; tracked_run logs the run at DEBUG
    mlflow.set_tracking_uri(project.tracking_uri)
    if not user_set:  # MLflow exports the URI; left there it would redirect the next project in this process
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    experiment_id = ensure_experiment(project, EXPERIMENT)
    mlflow.set_experiment(EXPERIMENT)
    return experiment_id


def ensure_experiment(project: Project, name: str) -> str:
    """The id of experiment `name` in the configured store, created (artifacts in the project) if missing."""
    import mlflow

    experiment = mlflow.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    if project.tracks_to_server:
        return mlflow.create_experiment(name)
    project.mlflow_artifacts.mkdir(parents=True, exist_ok=True)
    return mlflow.create_experiment(name, artifact_location=project.mlflow_artifacts.as_uri())


def short_hostname() -> str:
    """This machine's host name without its domain: what `HOST_TAG` holds."""
    return socket.gethostname().split(".", 1)[0]


def reap_dead_runs(experiment_id: str) -> list[str]:
    """Mark KILLED each RUNNING run of the experiment that a process of this host opened and that process is gone
    (killed with SIGKILL, or the machine stopped): left RUNNING it would read as a run still in progress. Runs of
    other hosts, runs without the tags (opened by an older escrag), and runs whose pid another process has taken
    since are left alone. Returns the ids of the runs it marked."""
    from mlflow.entities import RunStatus, ViewType

    mlflow_client, host, reaped = client(), short_hostname(), []
    token = None
    while True:
        page = mlflow_client.search_runs(
            [experiment_id],
            filter_string="attributes.status = 'RUNNING'",
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=1000,
            page_token=token,
        )
        for run in page:
            tags = run.data.tags
            pid = tags.get(PID_TAG, "")
            if tags.get(HOST_TAG) != host or not pid.isdigit() or is_running(int(pid)):
                continue
            mlflow_client.set_terminated(run.info.run_id, status=RunStatus.to_string(RunStatus.KILLED))
            logger.info(
                "MLflow run %s (%s) was left RUNNING by process %s on %s, which no longer exists: marked KILLED",
                run.info.run_id,
                run.info.run_name,
                pid,
                host,
            )
            reaped.append(run.info.run_id)
        token = page.token
        if not token:
            return reaped


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While inside, SIGTERM raises RunTerminated, where it would otherwise end the process on the spot (the default
    action; main thread only: only there may Python set handlers). A handler someone else set is left in place: under
    a Prefect flow, Prefect's raises TerminationSignal, which `tracked_run` treats the same way. On the way out the
    default is put back and a SIGTERM that ended the block is delivered again, so the process ends as it would have."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def raise_terminated(signum: int, frame: Any) -> None:
        raise RunTerminated(signum)

    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    except RunTerminated as exc:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), exc.signum)
        raise  # not reached: the default action ends the process
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stopped_from_outside() -> tuple[type[BaseException], ...]:
    """What a SIGTERM or Ctrl-C raises inside a run: ours, Python's, and Prefect's when Prefect is loaded (looked up,
    not imported: without Prefect in the process its handler cannot be installed)."""
    prefect_exceptions = sys.modules.get("prefect.exceptions")
    theirs = getattr(prefect_exceptions, "TerminationSignal", None)
    return (RunTerminated, KeyboardInterrupt, *([theirs] if theirs else []))


@contextlib.contextmanager
def tracked_run(project: Project, stage: str, run_id: str | None = None) -> Iterator[Any]:
    """A run tagged with the lineage contract and the process that opened it (`PID_TAG`, `HOST_TAG`); resumes
    `run_id` when given. Runs that dead processes of this host left RUNNING are first marked KILLED
    (`reap_dead_runs`); a SIGTERM or Ctrl-C while this run is open ends it as KILLED, not FAILED or RUNNING."""
    import mlflow
    from mlflow.entities import RunStatus

    reap_dead_runs(configure(project))
    opened_by = {PID_TAG: str(os.getpid()), HOST_TAG: short_hostname()}
    with _sigterm_raises(), mlflow.start_run(run_id=run_id, run_name=None if run_id else stage, tags=opened_by) as run:
        logger.debug("MLflow run %s (%s) on %s", run.info.run_id, stage, without_credentials(mlflow.get_tracking_uri()))
        try:
            mlflow.set_tags({**lineage_tags(project.root), "escrag.stage": stage})
            yield run
        except _stopped_from_outside() as exc:
            mlflow.end_run(RunStatus.to_string(RunStatus.KILLED))
            logger.info("MLflow run %s (%s) ended as KILLED: %s", run.info.run_id, stage, type(exc).__name__)
            raise


def log_jsonl_dataset(path: Path, records: list[dict[str, Any]], name: str, digest: str, context: str) -> None:
    """`mlflow.log_input` for a DVC-tracked dataset, with its DVC md5 as the digest."""
    import mlflow
    import pandas as pd

    frame = pd.DataFrame(
        [{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in r.items()} for r in records]
    )
    dataset = mlflow.data.from_pandas(frame, source=str(path), name=name, digest=digest[:36])
    mlflow.log_input(dataset, context=context)
