"""The fault suite: each test injects one fault into a throw-away copy of the project (tiny models, real
DVC, MLflow, LanceDB and Prefect) and checks a promise escrag makes. `make test` prints one table at the
end, one row per fault: what was injected, what escrag did, what was checked, pass or fail.

The whole-flow faults share one project and one first run (`first_run`): it is started with secrets in its
environment (fault 10), and a second `escrag run` is started while it holds the project (fault 6).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from flows.cli import RUN_LOCK
from tasks.project import Project
from tests.integration.conftest import escrag_env
from tests.integration.project_copy import tiny_project

# Made at run time, so no file of the project (this one included) holds them unless a run wrote them there.
SECRETS = {"ESCRAG_LLM_API_KEY": f"sk-{secrets.token_hex(16)}", "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(30)}
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


def escrag(project: Path, *args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    """`escrag ARGS` on `project`, started (not waited for), with its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "--project", str(project), *args],
        cwd=project,
        env=env or escrag_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


@pytest.fixture(scope="package")
def fault_project(tmp_path_factory, repo_root) -> Path:
    return tiny_project(repo_root, tmp_path_factory, "fault-project")


@dataclass
class FirstRun:
    returncode: int
    stdout: str
    stderr: str
    second: subprocess.CompletedProcess  # the `escrag run` started while the first one held the project
    second_seconds: float
    dvc_status: str  # `dvc status --json` right after the first run, before other faults change the project


@pytest.fixture(scope="package")
def first_run(fault_project) -> FirstRun:
    """The whole flow once, with SECRETS in its environment; a second run is started once it holds the project."""
    env = {**escrag_env(), **SECRETS}
    first = escrag(fault_project, "run", env=env)
    lock = Project(fault_project).state / RUN_LOCK
    deadline = time.monotonic() + 300
    while not (lock.exists() and lock.stat().st_size) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)  # until the first run holds the project (its lock names it)
    start = time.monotonic()
    second = subprocess.run(
        [sys.executable, "-m", "flows.cli", "--project", str(fault_project), "run"],
        cwd=fault_project, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    seconds = time.monotonic() - start
    out, err = first.communicate(timeout=1800)
    status = subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=fault_project, capture_output=True,
                            text=True, check=True, env=escrag_env())  # fmt: skip
    return FirstRun(first.returncode, out, err, second, seconds, status.stdout.strip())
