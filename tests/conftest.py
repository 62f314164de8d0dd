"""Shared fixtures. Every test runs offline, with telemetry off."""

from __future__ import annotations

import os
import re
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


# `make test` runs on two pytest-xdist workers. Each worker takes whole groups: one test module each, so module
# fixtures are built once, except the modules that share a package fixture, which go together: the fault suite
# (its scenario) and the integration modules that use the whole-flow run (`first_run`, `champion`). The groups
# are named here, from the nodeid alone, because xdist's own `xdist_group` mark does not reach pytest 9's nodeids.
SHARED_RUN = re.compile(r"\bdef \w+\([^)]*\b(first_run|champion)\b", re.DOTALL)


def _shared_run_modules() -> set[str]:
    folder = REPO_ROOT / "tests" / "integration"
    return {f"tests/integration/{p.name}" for p in folder.glob("test_*.py") if SHARED_RUN.search(p.read_text())}


def group_of(nodeid: str, shared: set[str]) -> str:
    """The group a test runs in: its module, the fault suite, or the integration whole-flow run."""
    module = nodeid.split("::")[0]
    if module.startswith("tests/faults/"):
        return "tests/faults"
    return "tests/integration (whole-flow run)" if module in shared else module


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    shared = _shared_run_modules()

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, shared)

    return GroupScheduling(config, log)
