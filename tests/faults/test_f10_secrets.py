"""Fault 10: every run of the scenario with ESCRAG_LLM_API_KEY and AWS_SECRET_ACCESS_KEY set. No MLflow param, tag,
metric, artifact, Prefect record or log line carries their values."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.conftest import SECRETS, project_files

pytestmark = pytest.mark.slow


def _files_holding(root: Path, secret: bytes) -> list[str]:
    return [str(p.relative_to(root)) for p in project_files(root) if secret in p.read_bytes()]


def test_no_secret_reaches_the_store_artifacts_or_logs(scenario, fault_project, fault):
    row = fault(10, "secrets in the environment of every run", "tracking store and its artifacts, artifacts/, "
                "Prefect state, every run's stdout+stderr hold neither value")  # fmt: skip
    scanned = project_files(fault_project)
    assert (fault_project / ".mlflow" / "mlflow.db").is_file() and len(scanned) > 100
    streams = {"final run stdout": scenario.final.stdout, "final run stderr": scenario.final.stderr}
    streams |= {f"{step} stderr": seen["stderr"] for step, seen in scenario.seen.items() if seen.get("stderr")}
    leaks = {}
    for name, value in SECRETS.items():
        files = _files_holding(fault_project, value.encode())
        logs = [stream for stream, text in streams.items() if value in text]
        if files or logs:
            leaks[name] = files + logs
    lines = sum(len(text.splitlines()) for text in streams.values())
    row.did = f"scanned {len(scanned)} files and {lines} log lines of {len(streams)} streams: " + (
        "no secret found" if not leaks else f"leaks {sorted(leaks)}"
    )
    assert not leaks, leaks
