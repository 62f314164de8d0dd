"""Pure guards of the command line: where escrag may write, and the lock that keeps one run per project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flows.cli_support import ArgumentRefused, inside_project
from tasks.file_lock import LockBusy, exclusive, holder
from tasks.project import Project


@pytest.fixture
def project(tmp_path) -> Project:
    root = tmp_path / "project"
    (root / "artifacts").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "artifacts" / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    return Project(root)


def test_paths_inside_the_project_are_accepted_resolved(project, monkeypatch):
    monkeypatch.chdir(project.root)
    resolved = inside_project(project, Path("artifacts/x/../y.jsonl"), "--out")
    assert resolved == project.root.resolve() / "artifacts" / "y.jsonl"


@pytest.mark.parametrize("value", ["../escaped.jsonl", "/tmp/elsewhere.jsonl", "artifacts/out/x.jsonl"])
def test_paths_that_land_outside_are_refused_naming_the_argument(project, monkeypatch, value):
    monkeypatch.chdir(project.root)
    with pytest.raises(ArgumentRefused, match=r"^--out .*outside the project"):
        inside_project(project, Path(value), "--out")


def test_a_held_lock_refuses_a_second_holder_naming_the_first(tmp_path):
    path = tmp_path / "run.lock"
    with exclusive(path, 0, "escrag run"):
        assert f"pid {os.getpid()}" in holder(path)
        with pytest.raises(LockBusy, match=rf"escrag run is busy: pid {os.getpid()} on .* holds"):
            with exclusive(path, 0.6, "escrag run"):
                pass
    with exclusive(path, 0, "escrag run"):  # released on exit: the next holder gets it at once
        pass


def test_an_unreachable_tracking_server_is_named_without_its_credentials(project, monkeypatch):
    from tasks.services import free_port  # closed again when it returns: nothing listens there
    from tasks.tracking import TrackingUnreachable, check_reachable

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://alice:s3cret@127.0.0.1:{free_port()}")
    with pytest.raises(TrackingUnreachable) as refused:
        check_reachable(project, timeout_s=2)
    assert "127.0.0.1" in str(refused.value) and "MLFLOW_TRACKING_URI" in str(refused.value)
    assert "s3cret" not in str(refused.value) and "alice" not in str(refused.value)


def test_a_project_store_needs_no_server(project, monkeypatch):
    from tasks.tracking import check_reachable

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    check_reachable(project)  # SQLite inside the project: nothing to reach, no error


def test_disk_full_is_recognised_through_the_chain_and_in_native_messages():
    import errno

    from flows.cli_support import disk_full

    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as cause:
            raise RuntimeError("saving the checkpoint failed") from cause
    except RuntimeError as wrapped:
        assert disk_full(wrapped)
    assert disk_full(RuntimeError("lance error: LanceError(IO): No space left on device (os error 28)"))
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not disk_full(ValueError("no space in this message"))
