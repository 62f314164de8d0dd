"""Shared fixtures. Every test runs offline, with telemetry off."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

# Under `make test` each of the two xdist workers gets one core: left at the default, torch in both workers
# (and in the escrag processes they start, which inherit this) would run two threads each on two cores.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

from tasks.project import service_environment  # noqa: E402
from tests.fault_table import pytest_runtest_logreport, pytest_terminal_summary  # noqa: E402, F401 - hooks

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SHARED_ESCONV = SHARED_DATA / "esconv"

# The same offline, telemetry-free environment as a real run; Prefect state stays per test project.
for key, value in service_environment(REPO_ROOT).items():
    if key != "PREFECT_HOME":
        os.environ.setdefault(key, value)
os.environ.pop("MLFLOW_TRACKING_URI", None)  # tests use stores inside their temporary projects


@pytest.fixture(autouse=True)
def _no_tracking_uri_from_an_earlier_test() -> None:
    """mlflow.set_tracking_uri exports MLFLOW_TRACKING_URI: one test's server (gone by now) must not become the
    store of the next test in this process (found when xdist ran the orchestration module before fault 9)."""
    os.environ.pop("MLFLOW_TRACKING_URI", None)


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
WHOLE_FLOW = "tests/integration (whole-flow run)"
SHARED_RUN = re.compile(r"\bdef \w+\([^)]*\b(first_run|champion)\b", re.DOTALL)


def _shared_run_modules() -> set[str]:
    folder = REPO_ROOT / "tests" / "integration"
    return {f"tests/integration/{p.name}" for p in folder.glob("test_*.py") if SHARED_RUN.search(p.read_text())}


def group_of(nodeid: str, shared: set[str]) -> str:
    """The group a test runs in: its module, the fault suite, or the integration whole-flow run."""
    module = nodeid.split("::")[0]
    if module.startswith("tests/faults/"):
        return "tests/faults"
    return WHOLE_FLOW if module in shared else module


# The longest groups start first, so that none of them is left to run alone at the end.
LONGEST_FIRST = ("tests/integration/test_orchestration.py", WHOLE_FLOW, "tests/faults")


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    shared = _shared_run_modules()

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, shared)

        def _assign_work_unit(self, node) -> None:
            for scope in reversed(LONGEST_FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)
