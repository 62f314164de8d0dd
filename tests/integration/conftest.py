"""The one whole-flow run the integration modules share: a copy of the project, retrained once with tiny
models (tests/integration/tiny_models.py), read by test_retrain_flow.py and test_promotion.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.project_copy import tiny_project


def escrag_env() -> dict[str, str]:
    """This environment without servers or Prefect home: each project uses its own stores."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_TRACKING", "PREFECT_API"))}
    env.pop("PREFECT_HOME", None)
    return env


def run_escrag(project: Path, *args: str, launcher: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`escrag ARGS` in `project` as a fresh process, under `launcher` (e.g. accelerate launch) when given."""
    return subprocess.run(
        [sys.executable, *(launcher or ("-m",)), "flows.cli", "--project", str(project), *args],
        cwd=project,
        env=escrag_env(),
        capture_output=True,
        text=True,
        timeout=1200,
    )


def mlflow_client(project: Path):
    import mlflow
    from mlflow import MlflowClient

    mlflow.set_tracking_uri(f"sqlite:///{project / '.mlflow' / 'mlflow.db'}")
    return MlflowClient()


@pytest.fixture(scope="package")
def project(tmp_path_factory, repo_root) -> Path:
    return tiny_project(repo_root, tmp_path_factory, "escrag-project")


@pytest.fixture(scope="package")
def first_run(project) -> subprocess.CompletedProcess:
    result = run_escrag(project, "run")
    assert result.returncode == 0, result.stderr[-4000:]
    return result


@pytest.fixture(scope="package")
def champion(project, first_run) -> str:
    """Version 1 promoted by hand (its random replies fail the crisis suite, so the gate skipped)."""
    result = run_escrag(project, "promote", "1", "--reason", "plumbing test", "--skip-safety-gate")
    assert result.returncode == 0, result.stderr[-4000:]
    return "1"
