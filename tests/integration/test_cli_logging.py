"""The escrag logging setup (flows.cli_support.setup_logging) shows module loggers' INFO lines on stderr, once,
whether Prefect set up logging before it (a worker's flow-run process) or after it (`escrag run`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import escrag_env

# A worker's flow-run process: Prefect is loaded (and sets up logging) before any escrag code; then a real flow.
PREFECT_FIRST = """
import logging
from prefect import flow, task

from flows.cli_support import setup_logging

log = logging.getLogger("tasks.logging_probe")


@task
def step() -> None:
    log.info("MARK from a task")


@flow
def tiny() -> None:
    setup_logging()  # as flows.retrain.retrain and flows.train.train do first
    log.info("MARK from the flow")
    step()


tiny()
"""

# `escrag -v run`: the CLI sets up logging, Prefect loads later, and the flow sets it up again.
CLI_FIRST = """
import logging
from flows.cli_support import setup_logging

setup_logging(verbose=True)
import prefect.main  # what `from prefect import flow` loads: Prefect's own logging setup

setup_logging()
log = logging.getLogger("tasks.logging_probe")
log.info("MARK at info")
log.debug("MARK at debug")
"""


def run_python(code: str, tmp_path: Path, repo_root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo_root,
        env={**escrag_env(), "PREFECT_HOME": str(tmp_path / ".prefect")},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_module_info_lines_reach_stderr_once_in_a_flow_run_where_prefect_set_up_logging_first(
    tmp_path, repo_root
) -> None:
    done = run_python(PREFECT_FIRST, tmp_path, repo_root)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("MARK from the flow") == 1, done.stderr[-3000:]
    assert done.stderr.count("MARK from a task") == 1, done.stderr[-3000:]
    assert "MARK" not in done.stdout


def test_the_cli_setup_survives_prefect_loading_after_it_without_printing_lines_twice(tmp_path, repo_root) -> None:
    done = run_python(CLI_FIRST, tmp_path, repo_root)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("MARK at info") == 1, done.stderr
    assert done.stderr.count("MARK at debug") == 1, done.stderr  # -v kept: the second call only ever lowers the level
    assert "MARK" not in done.stdout
