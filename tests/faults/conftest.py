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
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
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
_ROWS: list[dict] = []
HEADERS = ("fault injected", "what escrag did", "what was checked")


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


def pytest_runtest_logreport(report) -> None:
    row = dict(report.user_properties).get("fault")
    if row is not None and (report.when == "call" or report.outcome != "passed"):
        _ROWS.append({"row": row, "outcome": report.outcome, "when": report.when})


def pytest_terminal_summary(terminalreporter) -> None:
    if not _ROWS:
        return
    terminalreporter.section("fault suite")
    widths = (36, 56, 48)
    header = "  ".join(f"{h:{w}}" for h, w in zip(HEADERS, widths, strict=True))
    terminalreporter.write_line(f"{'#':>2}  {header}  result")
    for found in sorted(_ROWS, key=lambda r: r["row"].number):
        row = found["row"]
        result = "pass" if found["outcome"] == "passed" else f"FAIL ({found['when']})"
        texts = (row.injected, row.did, row.checked)
        cells = [textwrap.wrap(text, w) or [""] for text, w in zip(texts, widths, strict=True)]
        for i in range(max(map(len, cells))):
            parts = [f"{(c[i] if i < len(c) else ''):{w}}" for c, w in zip(cells, widths, strict=True)]
            lead, tail = (f"{row.number:>2}", result) if i == 0 else ("", "")
            terminalreporter.write_line(f"{lead:>2}  " + "  ".join(parts) + f"  {tail}")


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
