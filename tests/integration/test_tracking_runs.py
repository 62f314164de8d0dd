"""tasks.tracking.tracked_run against real MLflow stores: runs of killed processes do not stay RUNNING, and MLflow's
"View run … at: http://…" lines stay off stdout."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.project import Project
from tasks.services import free_port
from tests.integration.conftest import escrag_env

# Opens a tracked run in the project argv[1], prints its id, then gets signal argv[2] from itself.
DOOMED = """
import os, signal, sys, time
from pathlib import Path
from tasks.project import Project
from tasks.tracking import tracked_run

with tracked_run(Project(Path(sys.argv[1])), "doomed") as run:
    print(run.info.run_id, flush=True)
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
    time.sleep(60)
print("survived", flush=True)
"""


def doomed_run(project: Path, signal_name: str, repo_root: Path) -> tuple[str, subprocess.Popen, str]:
    """The id of a run opened by a process that `signal_name` then ended, that process, and its stdout."""
    child = subprocess.Popen(
        [sys.executable, "-c", DOOMED, str(project), signal_name],
        cwd=repo_root,
        env=escrag_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = child.communicate(timeout=300)
    assert out.split(), err[-3000:]
    return out.split()[0], child, out


def test_a_run_left_running_by_a_killed_process_is_marked_killed_by_the_next_run(tmp_path, repo_root, caplog) -> None:
    from mlflow.entities import RunStatus

    from tasks.tracking import HOST_TAG, PID_TAG, client, configure, short_hostname, tracked_run

    dead_id, child, _ = doomed_run(tmp_path, "SIGKILL", repo_root)
    assert child.returncode == -signal.SIGKILL
    experiment_id = configure(Project(tmp_path))
    dead = client().get_run(dead_id)
    assert dead.info.status == "RUNNING"  # what an auditor saw until now
    assert (dead.data.tags[PID_TAG], dead.data.tags[HOST_TAG]) == (str(child.pid), short_hostname())
    # Left alone: a run of a live process here, and one of another machine (whose pids mean nothing here).
    alive = client().create_run(experiment_id, tags={PID_TAG: str(os.getpid()), HOST_TAG: short_hostname()})
    elsewhere = client().create_run(experiment_id, tags={PID_TAG: str(child.pid), HOST_TAG: "another-host"})

    handler = signal.getsignal(signal.SIGTERM)
    with caplog.at_level(logging.INFO, logger="tasks.tracking"), tracked_run(Project(tmp_path), "next"):
        pass
    assert signal.getsignal(signal.SIGTERM) is handler  # put back once the run is over

    assert client().get_run(dead_id).info.status == RunStatus.to_string(RunStatus.KILLED)
    assert client().get_run(alive.info.run_id).info.status == "RUNNING"
    assert client().get_run(elsewhere.info.run_id).info.status == "RUNNING"
    reaped = [r.getMessage() for r in caplog.records if "marked KILLED" in r.getMessage()]
    assert len(reaped) == 1 and dead_id in reaped[0], reaped


def test_sigterm_during_a_tracked_run_ends_it_killed_and_still_ends_the_process(tmp_path, repo_root) -> None:
    from tasks.tracking import client, configure

    run_id, child, out = doomed_run(tmp_path, "SIGTERM", repo_root)

    assert child.returncode == -signal.SIGTERM  # as without escrag's handler: the process still ends on SIGTERM
    assert "survived" not in out
    configure(Project(tmp_path))
    assert client().get_run(run_id).info.status == "KILLED"


@pytest.fixture(scope="module")
def tracking_server(tmp_path_factory) -> Iterator[str]:
    """A real MLflow tracking server (the one kind of store MLflow prints run links for)."""
    from tests.faults.scenario import start_mlflow_server

    port = free_port()
    server = start_mlflow_server(tmp_path_factory.mktemp("mlflow-server"), port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def test_mlflow_run_links_stay_off_stdout(tracking_server, tmp_path, monkeypatch, capfd) -> None:
    from tasks.tracking import SUPPRESS_RUN_LINKS, tracked_run

    monkeypatch.delenv(SUPPRESS_RUN_LINKS, raising=False)  # as in a fresh `escrag` process
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_server)

    with tracked_run(Project(tmp_path), "linkless") as run:
        pass

    out = capfd.readouterr().out
    assert run.info.run_id and "View run" not in out and tracking_server not in out, out
