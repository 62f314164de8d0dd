"""MLflow wiring: the tracking store, the experiment, runs with lineage tags, and dataset inputs."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tasks.health import probe
from tasks.lineage import lineage_tags
from tasks.project import Project

logger = logging.getLogger(__name__)

EXPERIMENT = "escrag"
HISTORY_EXPERIMENT = "escrag-promotions"  # one run per promotion decision or alias move (tasks/promotion_history.py)
POLICY_MODEL = "escrag-policy"
REWARD_MODEL = "escrag-reward"
EVALUATORS_MODEL = "escrag-evaluators"
CHALLENGER, CHAMPION = "challenger", "champion"  # registry aliases, for every registered model


class TrackingUnreachable(ConnectionError):
    """The MLflow tracking server a run would log to does not answer."""


def without_credentials(uri: str) -> str:
    """`uri` with any user:password@ removed: what may appear in a message or a log."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
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


@contextlib.contextmanager
def tracked_run(project: Project, stage: str, run_id: str | None = None) -> Iterator[Any]:
    """A run tagged with the lineage contract; resumes `run_id` when given."""
    import mlflow

    configure(project)
    with mlflow.start_run(run_id=run_id, run_name=None if run_id else stage) as run:
        mlflow.set_tags({**lineage_tags(project.root), "escrag.stage": stage})
        yield run


def log_jsonl_dataset(path: Path, records: list[dict[str, Any]], name: str, digest: str, context: str) -> None:
    """`mlflow.log_input` for a DVC-tracked dataset, with its DVC md5 as the digest."""
    import mlflow
    import pandas as pd

    frame = pd.DataFrame(
        [{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in r.items()} for r in records]
    )
    dataset = mlflow.data.from_pandas(frame, source=str(path), name=name, digest=digest[:36])
    mlflow.log_input(dataset, context=context)
