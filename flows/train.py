"""The `train` flow: training stages on a GPU worker's own clone, handed back through git and DVC.

Deployed twice on the `gpu` pool (prefect.yaml): `train/reward-model` and `train/policy` (SFT then
GRPO). The deployment's pull step has already checked out the flow run's `git_rev`; this flow pulls the
stage inputs that `dvc.lock` names from the DVC remote, runs the stages (the same functions as
`dvc repro` and the in-process run), pushes the outputs and commits `dvc.lock` to the run branch.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.runtime import flow_run

from flows.cli_support import setup_logging
from flows.hooks import FAILURE_HOOKS
from tasks import git_ops, pipeline
from tasks.handoff import Handoff
from tasks.project import Project

# deployment name -> the stages it runs, in pipeline order; the orchestrator calls them in this order.
TRAINING_DEPLOYMENTS: dict[str, tuple[str, ...]] = {
    "train/reward-model": ("reward_model",),
    "train/policy": ("sft", "grpo"),
}
TRAINING_STAGES: tuple[str, ...] = tuple(s for stages in TRAINING_DEPLOYMENTS.values() for s in stages)


class TrainingFailed(RuntimeError):
    """A training deployment's flow run did not complete."""


def run_name(stages: list[str] | tuple[str, ...], data_version: str | None) -> str:
    return f"train-{'+'.join(stages)}-data-{(data_version or 'unknown')[:8]}"


def _this_run_name() -> str:
    params = flow_run.parameters
    return run_name(params.get("stages", []), params.get("data_version"))


@flow(name="train", flow_run_name=_this_run_name, log_prints=False, **FAILURE_HOOKS)
def train(
    stages: list[str],
    branch: str,
    data_version: str | None = None,
    git_rev: str | None = None,
    project_dir: str | None = None,
) -> str:
    """Run `stages` here at `git_rev` (checked out by the pull step); returns the handoff commit on `branch`."""
    setup_logging()  # on a worker only Prefect has set up logging: the stages' INFO lines would be lost
    project = Project.discover(Path(project_dir) if project_dir else None)
    project.params  # noqa: B018 - validate params.yaml at this revision before any work
    project.compute  # noqa: B018 - and refuse a device this worker lacks
    at = Handoff(branch, git_ops.head(project.root))
    for name in stages:
        pipeline.pull_inputs(project, name)
        pipeline.run_stage(project, name)
    at = pipeline.publish(project, list(stages), at, f"escrag {'+'.join(stages)}: data {data_version or 'unknown'}")
    return at.commit


def train_on_workers(project: Project, at: Handoff, data_version: str) -> Handoff:
    """Run each training deployment as a subflow on its pool, waiting for it; adopt what it committed."""
    from prefect.deployments import run_deployment

    for deployment, stages in TRAINING_DEPLOYMENTS.items():
        run = run_deployment(
            deployment,
            parameters={
                "stages": list(stages),
                "branch": at.branch,
                "git_rev": at.commit,
                "data_version": data_version,
            },
            flow_run_name=run_name(stages, data_version),
            timeout=None,
        )
        if run.state is None or not run.state.is_completed():
            state = run.state.name if run.state else "unknown"
            raise TrainingFailed(f"{deployment}: flow run {run.name} ended {state}: {run.state and run.state.message}")
        at = pipeline.adopt(project, at)
    return at


def deployments_ready() -> tuple[bool, str]:
    """True when a Prefect server is configured and has every training deployment; else why not."""
    from tasks.events import server_configured

    if not server_configured():
        return False, "no Prefect server configured (PREFECT_API_URL unset)"
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        for name in TRAINING_DEPLOYMENTS:
            try:
                client.read_deployment_by_name(name)
            except ObjectNotFound:
                return False, f"deployment {name} not found on the server (run `prefect --no-prompt deploy --all`)"
    return True, "training deployments found on the server"
