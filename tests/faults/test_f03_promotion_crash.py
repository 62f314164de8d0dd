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


def _champion(scenario) -> str | None:
    try:
        return str(scenario.client().get_model_version_by_alias("escrag-policy", "champion").version)
    except Exception:  # noqa: BLE001 - MLflow raises a generic error when the alias is unset
        return None


def _killed_promotion(scenario, when: str, repo_root) -> int:
    script = [sys.executable, "-c", KILLED_PROMOTION, str(scenario.root), when]
    return subprocess.run(script, cwd=repo_root, env=scenario.env, capture_output=True, timeout=300).returncode


def test_kill_inside_promotion_leaves_champion_and_history_whole(
    scenario, fault_project, fault, repo_root, monkeypatch
):
    row = fault(3, "kill -9 in a promotion, before and after the alias move", "champion unchanged by a half-done "
                "move; no half-entry in history; re-run settles, decides once")  # fmt: skip
    monkeypatch.setenv("MLFLOW_TRACKING_URI", scenario.tracking_uri)  # read_history reads the project's server
    project = Project(fault_project)
    champion, finished = _champion(scenario), len(read_history(project))
    assert champion is None, "the tiny policy fails the crisis suite: nothing was promoted by the run"

    assert _killed_promotion(scenario, "before", repo_root) == -signal.SIGKILL
    assert _champion(scenario) == champion and len(read_history(project)) == finished
    assert len(interrupted(project)) == 1  # the open entry, invisible to history

    assert _killed_promotion(scenario, "after", repo_root) == -signal.SIGKILL
    assert _champion(scenario) == "1"  # the alias moved; its entry was left open
    assert len(read_history(project)) == finished and len(interrupted(project)) == 1

    again = scenario.run("promote", "1", "--reason", "fault suite re-run", "--skip-safety-gate")
    assert again.returncode == 0, again.stderr[-3000:]
    entries = read_history(project)
    said = [line for line in again.stdout.splitlines() if "champion" in line][-1:]  # not MLflow's run links
    row.did = f"kills left the alias at {champion} then 1, entries open; re-run: {' '.join(said)[:70]}"
    assert not interrupted(project), "the re-run settled every open entry"
    assert len(entries) == finished + 1 and entries[-1].to_version == "1" and entries[-1].decision == "promoted"
    assert "already the champion" in again.stdout and _champion(scenario) == "1"
    history = scenario.client().get_experiment_by_name("escrag-promotions").experiment_id
    statuses = [r.info.status for r in scenario.client().search_runs([history])]
    assert statuses.count("FAILED") == 1  # the kill before the move: nothing took effect
