"""Fault 3: `kill -9` inside a promotion, before and after the alias move. The champion is never changed by
a half-done promotion, the history never shows a half-entry, and the next promotion settles what was left
and decides once."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tasks.project import Project
from tasks.promotion_history import interrupted, read_history
from tests.integration.conftest import escrag_env, mlflow_client, run_escrag

pytestmark = pytest.mark.slow

KILLED_PROMOTION = """
import os, signal, sys
from pathlib import Path
from tasks import promotion, registry
from tasks.project import Project

when, real = sys.argv[2], registry.move_champion

def move_then_die(version):
    if when == "after":
        real(version)
    os.kill(os.getpid(), signal.SIGKILL)

registry.move_champion = move_then_die
promotion.promote_manually(Project(Path(sys.argv[1])), "1", "fault suite", skip_safety_gate=True)
"""


def _champion(project) -> str | None:
    try:
        return str(mlflow_client(project).get_model_version_by_alias("escrag-policy", "champion").version)
    except Exception:  # noqa: BLE001 - MLflow raises a generic error when the alias is unset
        return None


def _killed_promotion(project, when: str, repo_root) -> int:
    script = [sys.executable, "-c", KILLED_PROMOTION, str(project), when]
    return subprocess.run(script, cwd=repo_root, env=escrag_env(), capture_output=True, timeout=300).returncode


def test_kill_inside_promotion_leaves_champion_and_history_whole(fault_project, first_run, fault, repo_root):
    row = fault(3, "kill -9 in a promotion, before and after the alias move", "champion unchanged by a half-done "
                "move; no half-entry in history; re-run settles, decides once")  # fmt: skip
    assert first_run.returncode == 0, first_run.stderr[-4000:]
    project = Project(fault_project)
    champion, finished = _champion(fault_project), len(read_history(project))
    assert champion is None, "the tiny policy fails the crisis suite: nothing was promoted by the run"

    assert _killed_promotion(fault_project, "before", repo_root) == -signal.SIGKILL
    assert _champion(fault_project) == champion and len(read_history(project)) == finished
    assert len(interrupted(project)) == 1  # the open entry, invisible to history

    assert _killed_promotion(fault_project, "after", repo_root) == -signal.SIGKILL
    assert _champion(fault_project) == "1"  # the alias moved; its entry was left open
    assert len(read_history(project)) == finished and len(interrupted(project)) == 1

    again = run_escrag(fault_project, "promote", "1", "--reason", "fault suite re-run", "--skip-safety-gate")
    assert again.returncode == 0, again.stderr[-3000:]
    entries = read_history(project)
    row.did = f"kills left the alias at {champion} then 1, entries open; re-run: {again.stdout.strip()[:60]}"
    assert not interrupted(project), "the re-run settled every open entry"
    assert len(entries) == finished + 1 and entries[-1].to_version == "1" and entries[-1].decision == "promoted"
    assert "already the champion" in again.stdout and _champion(fault_project) == "1"
    statuses = sorted(r.info.status for r in mlflow_client(fault_project).search_runs(
        [mlflow_client(fault_project).get_experiment_by_name("escrag-promotions").experiment_id]))  # fmt: skip
    assert statuses.count("FAILED") == 1  # the kill before the move: nothing took effect
