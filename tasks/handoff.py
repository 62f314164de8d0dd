"""Stages on machines that share no disk: inputs by `dvc pull` at a git revision, outputs by `dvc push`.

The orchestrator and every worker hold their own clone. What one machine hands to the next is a commit
on the run branch of the shared git remote: its `dvc.lock` (the md5 of every output, which the DVC
remote holds) and the small uncached metric and plot files of the stages it ran. Outputs that DVC does
not cache (the converted base model, the SFT checkpoint) are rebuilt where they are missing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tasks import dvc_ops, git_ops
from tasks.project import Project
from tasks.stages import PIPELINE_ORDER, STAGES

logger = logging.getLogger(__name__)

HANDOFF_FILES = ("dvc.lock", "data.dvc")


@dataclass(frozen=True)
class Handoff:
    """Where a run stands on the shared git remote: the branch and its last commit."""

    branch: str
    commit: str


def run_branch(run_name: str) -> str:
    return f"{git_ops.RUN_BRANCH_PREFIX}{run_name}"


def pull_inputs(project: Project, stage: str) -> list[str]:
    """Make data/ and the outputs of every stage that ran before `stage` match `dvc.lock` here.

    Cached outputs come from the DVC remote; a stage whose outputs are all uncached is run again here.
    Returns the stages rebuilt locally.
    """
    root = project.root
    dvc_ops.checkout_data(root)
    upstream = [s for s in PIPELINE_ORDER[: PIPELINE_ORDER.index(stage)] if dvc_ops.lock_entry(root, s)]
    dvc_ops.pull_stages(root, [s for s in upstream if dvc_ops.cached_outs(root, s)])
    rebuilt = []
    for name in upstream:
        if dvc_ops.cached_outs(root, name) or dvc_ops.stage_is_current(root, name):
            continue
        logger.info("stage %s: outputs are not cached in DVC; rebuilding them here", name)
        STAGES[name](project)
        dvc_ops.commit_stage(root, name)
        rebuilt.append(name)
    return rebuilt


def publish(project: Project, stages: list[str], handoff: Handoff, message: str) -> Handoff:
    """`dvc push` what `stages` produced, then commit `dvc.lock` and their small uncached files on the run
    branch (fast-forward only) so the next machine can pull exactly these outputs."""
    root = project.root
    dvc_ops.push_stages(root, stages)
    files = [*HANDOFF_FILES, *(f for s in stages for f in dvc_ops.uncached_files(root, s))]
    commit = git_ops.commit_files(root, handoff.commit, [f for f in files if (root / f).is_file()], message)
    git_ops.push(root, commit, handoff.branch)
    return Handoff(handoff.branch, commit)


def adopt(project: Project, handoff: Handoff) -> Handoff:
    """Take what a worker committed on the run branch into this clone's work tree.

    A worker's clone (detached HEAD) checks the commit out, so lineage tags name the commit whose
    `dvc.lock` the next stages read; a user's working copy (on a branch) only gets the files written.
    """
    root = project.root
    commit = git_ops.remote_branch_head(root, handoff.branch)
    if git_ops.current_branch(root) is None:
        git_ops.checkout_detached(root, commit)
        return Handoff(handoff.branch, commit)
    for path in git_ops.git(root, "diff", "--name-only", handoff.commit, commit).splitlines():
        content = git_ops.show(root, commit, path)
        if content is not None:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(content, encoding="utf-8")
    logger.info("adopted %s at %s", handoff.branch, commit[:12])
    return Handoff(handoff.branch, commit)
