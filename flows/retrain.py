"""The `retrain` flow: from versioned data to a promoted model. It only wires tasks together.

With a Prefect server that has the training deployments, the training stages run as subflows on the
`gpu` pool (flows/train.py) and the hand-over goes through the git and DVC remotes; otherwise every stage
runs here, in-process (the embedded default of `escrag run`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from prefect import flow
from prefect.runtime import flow_run

from flows.cli_support import setup_logging
from flows.hooks import FAILURE_HOOKS
from flows.train import TRAINING_STAGES, deployments_ready, train_on_workers
from tasks import git_ops, pipeline
from tasks.dvc_ops import data_md5
from tasks.handoff import Handoff, run_branch
from tasks.project import Project, find_root
from tasks.registry import Decision
from tasks.stages import PIPELINE_ORDER

logger = logging.getLogger(__name__)

# validate, then these on the orchestrator; TRAINING_STAGES (on the gpu pool with a server); then these.
BEFORE_TRAINING = PIPELINE_ORDER[1 : PIPELINE_ORDER.index(TRAINING_STAGES[0])]
AFTER_TRAINING = PIPELINE_ORDER[PIPELINE_ORDER.index(TRAINING_STAGES[-1]) + 1 :]


class DataVersionMismatch(ValueError):
    """The revision checked out does not hold the data version the run was started for."""


def _this_run_name() -> str:
    """`retrain-data-<md5>`: the data version the run was started for, else the one at the checkout."""
    version = flow_run.parameters.get("data_version")
    if not version:
        project_dir = flow_run.parameters.get("project_dir")
        version = data_md5(find_root(Path(project_dir) if project_dir else None)) or "unversioned"
    return f"retrain-data-{version[:8]}"


def _training_on_workers(project: Project) -> bool:
    ready, why = deployments_ready()
    if ready and not git_ops.has_remote(project.root):
        ready, why = False, f"{project.root} has no git remote {git_ops.REMOTE!r} to hand stages over through"
    logger.info("training stages run %s: %s", "on the gpu pool" if ready else "in-process", why)
    return ready


@flow(name="retrain", flow_run_name=_this_run_name, log_prints=False, **FAILURE_HOOKS)
def retrain(project_dir: str | None = None, data_version: str | None = None, git_rev: str | None = None) -> Decision:
    """Validate → version → base model → index → reward model → SFT → GRPO → evaluate → register → promote.

    `data_version` (a data md5) and `git_rev` come from the `escrag.data.versioned` trigger; the pull step
    has checked out `git_rev` already, and the run refuses a checkout that holds other data.
    """
    setup_logging()  # a worker's flow-run process has Prefect's logging only: the stages' INFO lines would be lost
    project = Project.discover(Path(project_dir) if project_dir else None)
    project.params  # noqa: B018 - validate params.yaml before any work
    if data_version and data_md5(project.root) != data_version:
        raise DataVersionMismatch(
            f"data.dvc at {git_ops.head(project.root)[:12]} is {data_md5(project.root)}, "
            f"not the data version {data_version} this run was started for"
        )
    pipeline.check_tracking(project)
    remote = _training_on_workers(project)
    if remote:
        pipeline.pull_inputs(project, "validate")
    else:
        pipeline.restore_data(project)
    pipeline.run_stage(project, "validate")
    md5 = pipeline.version_data(project)
    for name in BEFORE_TRAINING:
        pipeline.run_stage(project, name)
    if remote:
        start = Handoff(run_branch(flow_run.get_name() or md5[:8]), git_ops.head(project.root))
        at = pipeline.publish(project, ["validate", *BEFORE_TRAINING], start, f"escrag: inputs for data {md5}")
        at = train_on_workers(project, at, md5)
        pipeline.pull_inputs(project, AFTER_TRAINING[0])
    else:
        for name in TRAINING_STAGES:
            pipeline.run_stage(project, name)
    for name in AFTER_TRAINING:
        pipeline.run_stage(project, name)
    version = pipeline.register(project)
    decision = pipeline.promote(project, version)
    pipeline.report_decision(project, decision, md5)
    if remote:
        pipeline.publish(project, list(AFTER_TRAINING), at, f"escrag: evaluated for data {md5}")
    return decision
