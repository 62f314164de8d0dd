"""The fault suite: each test injects one fault into a throw-away copy of the project (tiny models, real
DVC, MLflow, LanceDB and Prefect) and checks a promise escrag makes. `make test` prints one table at the
end, one row per fault: what was injected, what escrag did, what was checked, pass or fail.

The whole-flow faults share one project (`scenario`, tests/faults/scenario.py): runs killed at three points,
then one that finishes with secrets in its environment while a second `escrag run` is refused.
"""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from tasks.services import free_port
from tests.faults.scenario import (
    Scenario,
    start_mlflow_server,
    step_final_run,
    step_kill_in_grpo,
    step_kill_in_push,
    step_kill_in_reward_model,
    step_no_server,
)
from tests.integration.conftest import escrag_env
from tests.integration.project_copy import tiny_project
from tests.integration.tiny_models import TINY_RUN

# Made at run time, so no file of the project (this one included) holds them unless a run wrote them there.
SECRETS = {"ESCRAG_LLM_API_KEY": f"sk-{secrets.token_hex(16)}", "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(30)}
GRPO_STEPS, GRPO_CHECKPOINT_EVERY = 6, 2


@dataclass
class FaultRow:
    """One row of the table; a test fills `did` with what escrag actually did."""

    number: int
    injected: str
    checked: str
    did: str = ""
    extra: dict = field(default_factory=dict)


@pytest.fixture
def fault(request):
    """`fault(number, injected, checked)` declares the test's row; set `.did` once escrag has acted."""

    def declare(number: int, injected: str, checked: str) -> FaultRow:
        row = FaultRow(number, injected, checked)
        request.node.user_properties.append(("fault", row))
        return row

    return declare


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Rows travel as plain dicts, so a pytest-xdist worker can send them to the table (tests/fault_table.py)."""
    report = yield
    report.user_properties = [(k, asdict(v) if isinstance(v, FaultRow) else v) for k, v in report.user_properties]
    return report


def project_files(root: Path) -> list[Path]:
    """Every regular file of the project, without following symlinks, outside .git and .escrag (locks)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (folder == str(root) and d in (".git", ".escrag"))]
        found += [Path(folder, f) for f in files if not Path(folder, f).is_symlink()]
    return sorted(found)


@pytest.fixture(scope="package")
def scenario(tmp_path_factory, repo_root) -> Iterator[Scenario]:
    """The project every whole-flow fault shares, after the runs of tests/faults/scenario.py (faults 1, 2, 6, 7,
    10); its MLflow server stays up for the faults that follow."""
    grpo = {**TINY_RUN["grpo"], "max_steps": GRPO_STEPS, "checkpoint_steps": GRPO_CHECKPOINT_EVERY}
    root = tiny_project(repo_root, tmp_path_factory, "fault-project", grpo=grpo)
    port = free_port()
    s = Scenario(root, {**escrag_env(), **SECRETS, "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"})
    step_no_server(s)
    server = start_mlflow_server(root, port)
    try:
        step_kill_in_push(s, repo_root)
        step_kill_in_reward_model(s)
        step_kill_in_grpo(s)
        step_final_run(s, tmp_path_factory.mktemp("fault-clone") / "clone")
        yield s
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@pytest.fixture(scope="package")
def fault_project(scenario) -> Path:
    """The scenario's project once its last run finished (the run itself is checked by faults 1, 2, 6, 7)."""
    assert scenario.final.returncode == 0, scenario.final.stderr[-4000:]
    return scenario.root
