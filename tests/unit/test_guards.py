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
