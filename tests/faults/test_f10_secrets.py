"""Fault 10: a whole run with ESCRAG_LLM_API_KEY and AWS_SECRET_ACCESS_KEY set. No MLflow param, tag,
metric, artifact, Prefect record or log line carries their values."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.conftest import SECRETS, project_files

pytestmark = pytest.mark.slow


def _files_holding(root: Path, secret: bytes) -> list[str]:
    return [str(p.relative_to(root)) for p in project_files(root) if secret in p.read_bytes()]


def test_no_secret_reaches_the_store_artifacts_or_logs(fault_project, first_run, fault):
    row = fault(10, "secrets in the environment of a whole run", "tracking store, MLflow artifacts, artifacts/, "
                "Prefect state, run's stdout+stderr hold neither value")  # fmt: skip
    assert first_run.returncode == 0, first_run.stderr[-4000:]
    scanned = project_files(fault_project)
    assert (fault_project / ".mlflow" / "mlflow.db").is_file() and len(scanned) > 100
    leaks = {}
    streams = {"stdout": first_run.stdout, "stderr": first_run.stderr}
    for name, value in SECRETS.items():
        files = _files_holding(fault_project, value.encode())
        logs = [stream for stream, text in streams.items() if value in text]
        if files or logs:
            leaks[name] = files + logs
    row.did = f"scanned {len(scanned)} files and {len(first_run.stderr.splitlines())} log lines: " + (
        "no secret found" if not leaks else f"leaks {sorted(leaks)}"
    )
    assert not leaks, leaks
