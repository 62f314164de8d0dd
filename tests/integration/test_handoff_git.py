"""The git side of a handoff, on real repositories: commits made without moving anyone's checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks import git_ops, notify
from tests.integration.cluster import COMMIT_AS, WebhookReceiver
from tests.integration.project_copy import git


@pytest.fixture
def repos(tmp_path) -> tuple[Path, Path]:
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(origin))
    git(tmp_path, "clone", "-q", str(origin), str(work))
    (work / "dvc.lock").write_text("stages: {}\n")
    (work / "code.py").write_text("x = 1\n")
    git(work, "add", "-A")
    git(work, *COMMIT_AS, "commit", "-qm", "start")
    git(work, "push", "-q", "origin", "main")
    return origin, work


def test_commit_files_leaves_branch_index_and_other_edits_alone(repos):
    _, work = repos
    start = git_ops.head(work)
    (work / "dvc.lock").write_text("stages: {grpo: {}}\n")
    (work / "code.py").write_text("x = 2  # the user's own edit, staged\n")
    git(work, "add", "code.py")
    commit = git_ops.commit_files(work, start, ["dvc.lock"], "escrag: handoff")
    assert git_ops.head(work) == start and git_ops.current_branch(work) == "main"
    assert git(work, "diff", "--cached", "--name-only").split() == ["code.py"]
    assert git(work, "show", "--name-only", "--format=", commit).split() == ["dvc.lock"]
    assert git_ops.show(work, commit, "code.py") == "x = 1\n"
    assert git_ops.commit_files(work, commit, ["dvc.lock"], "nothing new") == commit


def test_run_branch_only_fast_forwards(repos):
    _, work = repos
    start = git_ops.head(work)
    (work / "dvc.lock").write_text("stages: {a: {}}\n")
    first = git_ops.commit_files(work, start, ["dvc.lock"], "first")
    git_ops.push(work, first, "escrag/runs/r1")
    assert git_ops.remote_branch_head(work, "escrag/runs/r1") == first
    (work / "dvc.lock").write_text("stages: {b: {}}\n")
    rival = git_ops.commit_files(work, start, ["dvc.lock"], "a rival handoff from the same parent")
    with pytest.raises(git_ops.GitError, match="escrag/runs/r1"):
        git_ops.push(work, rival, "escrag/runs/r1")
    assert git_ops.remote_branch_head(work, "escrag/runs/r1") == first


def test_webhook_gets_the_json_and_a_dead_endpoint_does_not_raise(monkeypatch):
    receiver = WebhookReceiver()
    try:
        monkeypatch.setenv(notify.WEBHOOK_ENV, receiver.url)
        assert notify.send(notify.message("promotion", "v3 promoted", version="3"))
        assert receiver.received == [{"text": "escrag promotion: v3 promoted", "kind": "promotion", "version": "3"}]
    finally:
        receiver.close()
    monkeypatch.setenv(notify.WEBHOOK_ENV, receiver.url)  # closed now
    assert notify.send({"text": "x"}, attempts=1, timeout_s=1) is False
    monkeypatch.delenv(notify.WEBHOOK_ENV)
    assert notify.send({"text": "x"}) is False


def test_git_errors_name_the_command():
    with pytest.raises(git_ops.GitError, match="git rev-parse"):
        git_ops.git(Path("/"), "rev-parse", "--verify", "no-such-ref")
