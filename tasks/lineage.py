"""The lineage contract: what every MLflow run carries so an auditor can trace a model to its inputs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tasks.dvc_ops import data_md5, lock_dep_md5, lock_out_md5

# Stages whose outputs other stages consume; their dvc.lock md5s become run tags.
UPSTREAM_STAGES = ("validate", "base_model", "index", "evaluators", "reward_model", "sft")


def _git(root: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def git_state(root: Path) -> dict[str, str]:
    commit = _git(root, "rev-parse", "HEAD") or "unknown"
    # dvc.lock is rewritten by the run itself after each stage; any other uncommitted change is real
    changed = _git(root, "status", "--porcelain", "--untracked-files=no").splitlines()
    dirty = any(line.split(None, 1)[-1] != "dvc.lock" for line in changed)  # "XY path" (first X stripped)
    return {"git.commit": commit, "git.dirty": str(dirty).lower()}


def index_version(root: Path) -> str:
    meta = root / "artifacts" / "index" / "meta.json"
    return str(json.loads(meta.read_text())["version"]) if meta.exists() else "none"


def lineage_tags(root: Path) -> dict[str, str]:
    """git commit, data md5s (whole and per dataset), upstream stage outs, index version, base-model hash."""
    tags = {**git_state(root), "data.md5": data_md5(root) or "unversioned"}
    for path, md5 in lock_dep_md5(root, "validate").items():
        if path.startswith("data/"):
            tags[f"data.{path.removeprefix('data/')}.md5"] = md5
    for stage in UPSTREAM_STAGES:
        for path, md5 in lock_out_md5(root, stage).items():
            tags[f"dvc.{path}.md5"] = md5
    tags["index.table_version"] = index_version(root)
    tags["base_model.hash"] = lock_out_md5(root, "base_model").get("artifacts/base_model", "unknown")
    return tags
