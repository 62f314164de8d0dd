"""Git as the carrier of code and `dvc.lock` between machines: commits made without touching the work tree.

A worker or the orchestrator hands its `dvc.lock` to the next machine as a commit on a run branch of the
shared git remote. The commit is built with plumbing (a private index), so a user's checkout, branch and
staged changes are never moved when `escrag run` hands stages to a server from their working copy.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

REMOTE = "origin"
RUN_BRANCH_PREFIX = "escrag/runs/"


class GitError(RuntimeError):
    """A git command failed; the message carries the command and git's own words."""


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if result.returncode != 0:
        raise GitError(f"git {' '.join(args)} (in {root}): {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout.strip()


def has_remote(root: Path, remote: str = REMOTE) -> bool:
    try:
        return remote in git(root, "remote").split()
    except GitError:
        return False


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD")


def _identity(root: Path) -> dict[str, str]:
    """Commit as the configured user, or as escrag when none is configured (a fresh worker)."""
    try:
        git(root, "config", "user.email")
        return {}
    except GitError:
        return {
            "GIT_AUTHOR_NAME": "escrag",
            "GIT_AUTHOR_EMAIL": "escrag@localhost",
            "GIT_COMMITTER_NAME": "escrag",
            "GIT_COMMITTER_EMAIL": "escrag@localhost",
        }


def commit_files(root: Path, parent: str, paths: list[str], message: str) -> str:
    """A commit whose tree is `parent`'s with `paths` taken from the work tree; HEAD and the index stay."""
    with tempfile.TemporaryDirectory(prefix="escrag-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **_identity(root)}
        git(root, "read-tree", parent, env=env)
        git(root, "update-index", "--add", "--", *paths, env=env)
        tree = git(root, "write-tree", env=env)
        if tree == git(root, "rev-parse", f"{parent}^{{tree}}"):
            return parent
        return git(root, "commit-tree", tree, "-p", parent, "-m", message, env=env)


def push(root: Path, commit: str, branch: str, remote: str = REMOTE) -> None:
    """Push `commit` to `branch` of `remote`; refused unless it fast-forwards, so no handoff is lost."""
    git(root, "push", "--quiet", remote, f"{commit}:refs/heads/{branch}")


def fetch(root: Path, remote: str = REMOTE) -> None:
    git(root, "fetch", "--quiet", "--force", remote, "+refs/heads/*:refs/remotes/origin/*")


def remote_branch_head(root: Path, branch: str, remote: str = REMOTE) -> str:
    """Fetch `branch` of `remote` and return its commit."""
    git(root, "fetch", "--quiet", remote, f"refs/heads/{branch}")
    return git(root, "rev-parse", "FETCH_HEAD")


def default_branch_head(root: Path, remote: str = REMOTE) -> str:
    """The commit at the tip of the remote's default branch (what a cron-started retrain trains on)."""
    git(root, "fetch", "--quiet", remote, "HEAD")
    return git(root, "rev-parse", "FETCH_HEAD")


def checkout_detached(root: Path, rev: str) -> str:
    """Check out `rev` (detached, discarding local edits to tracked files); returns the full commit."""
    git(root, "checkout", "--quiet", "--force", "--detach", rev)
    return head(root)


def show(root: Path, rev: str, path: str) -> str | None:
    try:
        return git(root, "show", f"{rev}:{path}") + "\n"
    except GitError:
        return None


def current_branch(root: Path) -> str | None:
    try:
        return git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    except GitError:
        return None
