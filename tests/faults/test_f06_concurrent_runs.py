"""Fault 6: two `escrag run` at once on one project. The second refuses at once, naming the holder; the
first finishes, and dvc.lock, the LanceDB table and the registry hold exactly one run's results."""

from __future__ import annotations

import pytest
import yaml

from flows.cli_support import EXIT_BUSY
from tests.integration.conftest import mlflow_client

pytestmark = pytest.mark.slow


def test_second_run_refuses_while_the_first_holds_the_project(fault_project, first_run, fault):
    row = fault(6, "two `escrag run` at once on one project", "2nd exits 75 naming the holder; 1st completes; "
                "dvc.lock, LanceDB table, registry whole")  # fmt: skip
    second = first_run.second
    row.did = f"2nd refused in {first_run.second_seconds:.0f} s (exit {second.returncode}); 1st ran to the end"
    assert second.returncode == EXIT_BUSY, second.stderr[-2000:]
    assert "is busy" in second.stderr and "pid" in second.stderr and "--wait" in second.stderr
    assert first_run.returncode == 0, first_run.stderr[-4000:]

    lock = yaml.safe_load((fault_project / "dvc.lock").read_text())
    assert {"validate", "index", "grpo", "evaluate"} <= set(lock["stages"])
    assert first_run.dvc_status in ("{}", ""), first_run.dvc_status  # every stage current: dvc.lock is whole

    import lancedb

    table = lancedb.connect(str(fault_project / "artifacts" / "index")).open_table("guidance")
    assert table.count_rows() > 0
    versions = mlflow_client(fault_project).search_model_versions("name='escrag-policy'")
    assert len(versions) == 1, "one run registers one version"
