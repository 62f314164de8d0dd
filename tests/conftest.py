"""Shared fixtures. Every test runs offline, with telemetry off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

for key, value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DVC_NO_ANALYTICS": "1",
    "GX_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ.setdefault(key, value)
os.environ.pop("MLFLOW_TRACKING_URI", None)  # tests use stores inside their temporary projects

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_ESCONV = REPO_ROOT.parent / "shared" / "data" / "esconv"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def starter_data() -> Path:
    return REPO_ROOT / "starter_data"
