"""Where a project lives and what its params say; everything else derives paths from here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from models.compute import Compute, resolve_compute
from models.config import Params, load_params

ROOT_MARKERS = ("dvc.yaml", "params.yaml")


class ProjectNotFoundError(FileNotFoundError):
    """No folder with dvc.yaml and params.yaml at or above the start folder."""


def find_root(start: Path | None = None) -> Path:
    """`ESCRAG_PROJECT` if set, else the nearest folder at or above `start` with dvc.yaml and params.yaml."""
    if env := os.environ.get("ESCRAG_PROJECT"):
        return Path(env).resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if all((folder / m).is_file() for m in ROOT_MARKERS):
            return folder
    raise ProjectNotFoundError(f"no escrag project (dvc.yaml + params.yaml) at or above {here}")


@dataclass(frozen=True)
class Project:
    root: Path

    @classmethod
    def discover(cls, start: Path | None = None) -> Project:
        return cls(find_root(start))

    @cached_property
    def params(self) -> Params:
        return load_params(self.root / "params.yaml")

    @cached_property
    def compute(self) -> Compute:
        """The resolved `compute:` setting: where every model of this project runs."""
        return resolve_compute(self.params.compute)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def starter_data(self) -> Path:
        return self.root / "starter_data"

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    def artifact(self, *parts: str) -> Path:
        return self.artifacts.joinpath(*parts)

    @property
    def reports(self) -> Path:
        return self.artifacts / "reports"

    @property
    def state(self) -> Path:
        """This working tree's own state (locks, reproduction worktrees, checkpoints); ignored by git."""
        return self.root / ".escrag"

    @property
    def tracking_uri(self) -> str:
        """`MLFLOW_TRACKING_URI`, else a SQLite store inside the project."""
        return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{self.root / '.mlflow' / 'mlflow.db'}"

    @property
    def tracks_to_server(self) -> bool:
        """True when runs go to an MLflow tracking server (which stores and serves their artifacts)."""
        return self.tracking_uri.startswith(("http://", "https://"))

    @property
    def mlflow_artifacts(self) -> Path:
        return self.root / ".mlflow" / "artifacts"


def service_environment(root: Path) -> dict[str, str]:
    """Environment defaults for every process of a run: offline hubs, quiet telemetry, local state."""
    return {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DVC_NO_ANALYTICS": "1",
        "GX_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "PREFECT_HOME": str(root / ".prefect"),
        "TOKENIZERS_PARALLELISM": "false",
    }


def apply_service_environment(root: Path) -> None:
    """Set the defaults above where the user has not set them (call from entry points only)."""
    for key, value in service_environment(root).items():
        os.environ.setdefault(key, value)
