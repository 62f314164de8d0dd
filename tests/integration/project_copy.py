"""Make a throw-away copy of this project: the git-tracked files, a new git repo, its own DVC remote."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.integration.tiny_models import TINY_RUN, save_tiny_policy


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def copy_project(repo_root: Path, dest: Path) -> Path:
    """Copy what a fresh clone would hold (tracked + untracked-but-not-ignored files) and commit it."""
    listed = git(repo_root, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    for rel in filter(None, listed):
        src = repo_root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest, "init", "-q")
    git(dest, "-c", "user.email=t@escrag.invalid", "-c", "user.name=test", "add", "-A")
    git(dest, "-c", "user.email=t@escrag.invalid", "-c", "user.name=test", "commit", "-qm", "copy")
    return dest


def set_params(project: Path, changes: dict[str, dict]) -> None:
    path = project / "params.yaml"
    params = yaml.safe_load(path.read_text())
    for section, values in changes.items():
        if isinstance(values, dict) and isinstance(params.get(section), dict):
            params[section].update(values)
        else:
            params[section] = values
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def tiny_project(repo_root: Path, tmp_path_factory, name: str, **params: dict) -> Path:
    """A committed copy of the project that retrains in minutes: tiny random policy (TINY_RUN), with
    `params` sections laid over it."""
    root = copy_project(repo_root, tmp_path_factory.mktemp(name))
    tiny = save_tiny_policy(tmp_path_factory.mktemp(f"{name}-policy"))
    set_params(root, {**TINY_RUN, "base_model": {"source": str(tiny)}, **params})
    git(root, "-c", "user.email=t@escrag.invalid", "-c", "user.name=test", "commit", "-qam", "tiny params")
    return root
