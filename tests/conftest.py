"""Shared fixtures. Every test runs offline, with telemetry off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.project import service_environment

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SHARED_ESCONV = SHARED_DATA / "esconv"

# The same offline, telemetry-free environment as a real run; Prefect state stays per test project.
for key, value in service_environment(REPO_ROOT).items():
    if key != "PREFECT_HOME":
        os.environ.setdefault(key, value)
os.environ.pop("MLFLOW_TRACKING_URI", None)  # tests use stores inside their temporary projects


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def starter_data() -> Path:
    return REPO_ROOT / "starter_data"
