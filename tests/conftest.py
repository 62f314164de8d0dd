"""Shared fixtures. Every test runs offline, with telemetry off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.project import service_environment
from tests.fault_table import pytest_runtest_logreport, pytest_terminal_summary  # noqa: F401 - hooks

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


# `make test` runs on two pytest-xdist workers (--dist loadgroup). A worker takes whole groups: one per test
# module, so module fixtures are built once, except the modules that share a package fixture: the fault
# suite's scenario, and the integration package's whole-flow run (`first_run`, `champion`).
SHARED_RUNS = {"tests/faults": ("scenario", "fault_project"), "tests/integration": ("first_run", "champion")}


def _run_group(item: pytest.Item) -> str | None:
    path = Path(item.fspath).relative_to(REPO_ROOT).as_posix()
    for package, fixtures in SHARED_RUNS.items():
        if path.startswith(package + "/") and set(fixtures) & set(item.fixturenames):
            return package
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shared = {item.module.__name__: group for item in items if (group := _run_group(item))}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(shared.get(item.module.__name__, item.module.__name__)))
