"""`escrag reproduce`: rebuild a registered policy from its recorded inputs in a clean worktree, then compare.

The registered run (the GRPO run the policy was logged to) carries the lineage tags (tasks/lineage.py):
the git commit, the data md5, the dvc.lock md5 of every upstream output, the index table version and the
base-model hash. Reproduction:
1. checks out that commit in a new git worktree (never the user's own tree);
2. restores the data and the upstream outputs at the recorded md5s (the worktree's dvc.lock and data.dvc
   are pointed at them, then `dvc pull`): the LanceDB folder comes back whole, at its table version;
3. re-runs the stages that made the model (base_model, sft, grpo, then evaluate) with the worktree's own
   code and a tracking store of its own, so the registry is never touched;
4. compares weights (sha256, and the largest absolute difference), evaluation metrics and lineage tags.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tasks import dvc_ops
from tasks.evaluate_stage import eval_metrics
from tasks.lineage import lineage_tags
from tasks.project import Project

logger = logging.getLogger(__name__)

RERUN_STAGES = ("base_model", "sft", "grpo", "evaluate")  # what makes the model, re-run from its inputs
RESTORED_STAGES = ("validate", "index", "evaluators", "reward_model")  # pulled at their recorded md5s
COMPARED_TAGS = ("git.commit", "data.", "index.table_version", "base_model.hash")


@dataclass(frozen=True)
class Check:
    """One comparison between the registered model and its reproduction."""

    name: str
    registered: str
    reproduced: str
    matched: bool


@dataclass
class Reproduction:
    worktree: str
    commit: str
    seconds: float = 0.0
    rerun: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def matched(self) -> bool:
        return bool(self.checks) and all(c.matched for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "matched": self.matched}


class ReproductionError(RuntimeError):
    """A step of the reproduction failed; the message names the step."""


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, what: str = "") -> str:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise ReproductionError(f"{what or ' '.join(cmd)} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def prepare_worktree(project: Project, commit: str, into: Path) -> None:
    """A detached git worktree of `commit` at `into`, sharing the project's DVC cache and remote."""
    if into.exists() and any(into.iterdir()):
        raise ReproductionError(f"--into {into}: not empty; give a new folder")
    _run(["git", "worktree", "add", "--detach", str(into), commit], project.root, what="git worktree add")
    dvc = [sys.executable, "-m", "dvc"]
    _run([*dvc, "cache", "dir", "--local", str(project.root / ".dvc" / "cache")], into, what="dvc cache dir")
    for name, url in dvc_ops.remote_urls(project.root).items():
        _run([*dvc, "remote", "modify", "--local", name, "url", url], into, what="dvc remote modify")


def _declared_outputs(into: Path) -> dict[str, list[tuple[str, bool]]]:
    """Each stage's declared outputs (outs, metrics, plots) as (path, cached), from the worktree's dvc.yaml."""
    stages = yaml.safe_load((into / "dvc.yaml").read_text())["stages"]
    found: dict[str, list[tuple[str, bool]]] = {}
    for name, stage in stages.items():
        for key in ("outs", "metrics", "plots"):
            for item in stage.get(key) or []:
                path, options = next(iter(item.items())) if isinstance(item, dict) else (item, {})
                found.setdefault(name, []).append((path, (options or {}).get("cache", True)))
    return found


def _recorded_data_deps(deps: list[dict[str, Any]], tags: dict[str, str]) -> list[dict[str, Any]]:
    """A stage's lock deps with each dataset at its recorded md5 (`data.<dataset>.md5`), so the lineage
    tags read back from the worktree name the data the run saw."""
    recorded = {f"data/{k.removeprefix('data.').removesuffix('.md5')}": v for k, v in tags.items()
                if k.startswith("data.") and k.endswith(".md5") and k != "data.md5"}  # fmt: skip
    kept = [d for d in deps if d.get("path") not in recorded]
    return kept + [{"path": path, "hash": "md5", "md5": md5} for path, md5 in sorted(recorded.items())]


def point_inputs_at_recorded_md5s(into: Path, tags: dict[str, str]) -> list[str]:
    """Write the recorded md5s of the data and of each restored stage's cached outputs into the
    worktree's data.dvc and dvc.lock (the committed ones may predate the run, or lack the stage).
    Returns the stages whose every cached output was recorded: those are pulled, the rest re-run."""
    data_file = into / "data.dvc"
    data = yaml.safe_load(data_file.read_text())
    if tags.get("data.md5", "unversioned") != "unversioned":
        data["outs"][0]["md5"] = tags["data.md5"]
        data_file.write_text(yaml.safe_dump(data, sort_keys=False))
    lock_file = into / "dvc.lock"
    lock = yaml.safe_load(lock_file.read_text())
    declared = _declared_outputs(into)
    restorable = []
    for stage in RESTORED_STAGES:
        cached = [path for path, is_cached in declared.get(stage, []) if is_cached]
        recorded = {path: tags.get(f"dvc.{path}.md5") for path in cached}
        if cached and all(recorded.values()):
            entry = lock.setdefault("stages", {}).setdefault(stage, {"cmd": f"escrag stage {stage}"})
            entry["outs"] = [{"path": p, "hash": "md5", "md5": md5} for p, md5 in recorded.items()]
            entry["deps"] = _recorded_data_deps(entry.get("deps", []), tags)
            restorable.append(stage)
    lock_file.write_text(yaml.safe_dump(lock, sort_keys=False))
    return restorable


def stage_env(into: Path) -> dict[str, str]:
    """The worktree's own code first on the path, and its own tracking store (the registry stays as is)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_TRACKING", "PREFECT_API"))}
    env["PYTHONPATH"] = os.pathsep.join([str(into), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def rerun_stages(into: Path, stages: list[str], progress: Callable[[str], None]) -> None:
    for stage in stages:
        progress(f"re-running stage {stage}")
        cmd = [sys.executable, "-m", "flows.cli", "--project", str(into), "stage", stage]
        _run(cmd, into, stage_env(into), what=f"stage {stage}")
        with _quiet("dvc.dvcfile"):  # its "Updating lock file" goes to stdout, which is the report's
            dvc_ops.commit_stage(into, stage)  # dvc.lock now records what was rebuilt, for the comparison


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Only warnings from logger `name` while inside."""
    log = logging.getLogger(name)
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)


def compare(run: Any, into: Path, weight_difference: Callable[[Path], float | None]) -> list[Check]:
    """Weights, evaluation metrics and lineage tags of the registered run against the reproduction."""
    tags, metrics = run.data.tags, run.data.metrics
    digest = json.loads((into / "artifacts" / "grpo" / "run.json").read_text())["weights_sha256"]
    checks = [Check("weights sha256", tags.get("policy.weights_sha256", "?"), digest,
                    tags.get("policy.weights_sha256") == digest)]  # fmt: skip
    largest = weight_difference(into / "artifacts" / "policy")
    if largest is not None:
        checks.append(Check("largest weight difference", "0", f"{largest:.3g}", largest == 0.0))
    reproduced = eval_metrics(json.loads((into / "artifacts" / "reports" / "evaluate.json").read_text()))
    for name in sorted(k for k in metrics if k.startswith("eval.")):
        again = reproduced.get(name)
        checks.append(Check(name, f"{metrics[name]:.6g}", "missing" if again is None else f"{again:.6g}",
                            again is not None and abs(again - metrics[name]) <= 1e-9))  # fmt: skip
    now = lineage_tags(into)
    # an uncached report names its MLflow run, so it differs on every run by design; its metrics are compared
    # above. Uncached models (base_model, sft) are rebuilt here, so their md5s are compared.
    uncached = {f"dvc.{path}.md5" for outs in _declared_outputs(into).values() for path, cached in outs
                if not cached and path.startswith("artifacts/reports/")}  # fmt: skip
    for key in sorted(k for k in tags if (k.startswith(COMPARED_TAGS) or _is_upstream_tag(k)) and k not in uncached):
        checks.append(Check(f"tag {key}", tags[key], now.get(key, "missing"), now.get(key) == tags[key]))
    return checks


def _is_upstream_tag(key: str) -> bool:
    return key.startswith("dvc.") and key.endswith(".md5")


def reproduce(
    project: Project,
    run: Any,
    into: Path,
    weight_difference: Callable[[Path], float | None],
    progress: Callable[[str], None] = logger.info,
) -> Reproduction:
    """Rebuild the model of `run` (an MLflow run carrying lineage tags) in `into` and compare."""
    started = time.perf_counter()
    tags = run.data.tags
    commit = tags.get("git.commit", "unknown")
    if commit == "unknown":
        raise ReproductionError(f"run {run.info.run_id} records no git commit: it cannot be reproduced")
    result = Reproduction(str(into), commit)
    if tags.get("git.dirty") == "true":
        result.notes.append("the run recorded a dirty tree: uncommitted changes (beyond dvc.lock) are not restored")
    progress(f"checking out {commit[:12]} in {into}")
    prepare_worktree(project, commit, into)
    pulled = point_inputs_at_recorded_md5s(into, tags)
    progress(f"restoring data and the outputs of {', '.join(pulled)}")
    dvc_ops.checkout_data(into)
    dvc_ops.pull_stages(into, pulled)
    result.rerun = [s for s in RESTORED_STAGES if s not in pulled] + list(RERUN_STAGES)
    rerun_stages(into, result.rerun, progress)
    result.checks = compare(run, into, weight_difference)
    result.seconds = round(time.perf_counter() - started, 1)
    return result
