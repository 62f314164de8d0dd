"""`escrag reproduce`: the first run's registered policy is rebuilt in a clean worktree, bit for bit on CPU."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.integration.conftest import run_escrag


def test_reproduce_rebuilds_version_1_with_identical_weights_metrics_and_lineage(
    project: Path, first_run: subprocess.CompletedProcess, tmp_path: Path
) -> None:
    into = tmp_path / "reproduction"
    result = run_escrag(project, "reproduce", "models:/escrag-policy/1", "--into", str(into), "--json")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["matched"] is True
    assert checks["weights sha256"]["matched"] and len(checks["weights sha256"]["reproduced"]) == 64
    assert checks["largest weight difference"]["reproduced"] == "0"
    assert any(name.startswith("eval.candidate.") for name in checks), "the evaluation metrics are compared"
    assert checks["tag index.table_version"]["matched"] and checks["tag data.md5"]["matched"]
    assert report["rerun"][-4:] == ["base_model", "sft", "grpo", "evaluate"]
    assert (into / ".git").is_file(), "a git worktree of the recorded commit"


def test_reproduce_refuses_a_model_that_does_not_exist(project: Path, first_run: subprocess.CompletedProcess) -> None:
    result = run_escrag(project, "reproduce", "models:/escrag-policy/999")
    assert result.returncode == 2
    assert "models:/escrag-policy/999" in result.stderr
