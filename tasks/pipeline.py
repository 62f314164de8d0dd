"""Prefect tasks: thin wrappers that give each unit of work retries, logs and a place in the flow."""

from __future__ import annotations

import logging
import time

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger
from prefect.tasks import exponential_backoff

from tasks import dvc_ops, handoff, notify, promotion, registry, run_report, tracking
from tasks.project import Project
from tasks.stages import STAGES

# Tasks that talk to a remote (DVC remote, git remote, MLflow server) fail transiently: 3 retries after
# ~2, 4 and 8 s (±50% jitter). Each is idempotent, so a retry never duplicates work.
REMOTE_RETRIES = {
    "retries": 3,
    "retry_delay_seconds": exponential_backoff(backoff_factor=2),
    "retry_jitter_factor": 0.5,
}


def _logger() -> logging.Logger | logging.LoggerAdapter:
    try:
        return get_run_logger()
    except Exception:  # noqa: BLE001 - outside a run context
        return logging.getLogger(__name__)


@task(name="check-tracking", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def check_tracking(project: Project) -> None:
    """The tracking server answers, before any work: a run that cannot log must not train first."""
    tracking.check_reachable(project)


@task(name="restore-data", cache_policy=NO_CACHE)
def restore_data(project: Project) -> bool:
    return dvc_ops.restore_bundled_data(project.root)


@task(name="version-data", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def version_data(project: Project) -> str:
    """dvc add data + push to the default remote."""
    md5 = dvc_ops.version_data(project.root)
    _logger().info("data version %s pushed", md5)
    return md5


# DVC decides what is current, so Prefect never caches.
@task(name="stage", task_run_name="stage-{name}", cache_policy=NO_CACHE)
def run_stage(project: Project, name: str) -> dict:
    """Run a dvc.yaml stage in-process unless dvc.lock says it is current; then record it in dvc.lock."""
    log = _logger()
    if dvc_ops.stage_is_current(project.root, name):
        log.info("stage %s: up to date, skipped", name)
        return {"stage": name, "skipped": True}
    started = time.perf_counter()
    result = STAGES[name](project)
    dvc_ops.commit_stage(project.root, name)
    log.info("stage %s: done in %.1f s", name, time.perf_counter() - started)
    return {"stage": name, "skipped": False, "seconds": time.perf_counter() - started, **result}


@task(name="pull-inputs", task_run_name="pull-inputs-{stage}", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def pull_inputs(project: Project, stage: str) -> list[str]:
    """`dvc pull` what `stage` reads, as dvc.lock records it (rebuilding uncached outputs here)."""
    rebuilt = handoff.pull_inputs(project, stage)
    _logger().info("inputs of %s pulled%s", stage, f"; rebuilt here: {', '.join(rebuilt)}" if rebuilt else "")
    return rebuilt


@task(name="publish", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def publish(project: Project, stages: list[str], at: handoff.Handoff, message: str) -> handoff.Handoff:
    """`dvc push` the outputs of `stages` and commit dvc.lock on the run branch for the next machine."""
    result = handoff.publish(project, stages, at, message)
    _logger().info("published %s as %s on %s", ", ".join(stages), result.commit[:12], result.branch)
    return result


@task(name="adopt", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def adopt(project: Project, at: handoff.Handoff) -> handoff.Handoff:
    return handoff.adopt(project, at)


@task(name="register", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def register(project: Project) -> str:
    version = registry.register_candidate(project)
    _logger().info("%s version %s is the challenger", registry.POLICY_MODEL, version)
    return version


@task(name="promote", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def promote(project: Project, version: str) -> registry.Decision:
    decision = promotion.promote_candidate(project, version)
    _logger().info(decision.summary())
    return decision


@task(name="report-decision", cache_policy=NO_CACHE)
def report_decision(project: Project, decision: registry.Decision, data_version: str) -> None:
    """The evaluation table and the decision as a flow-run artifact in the Prefect UI, and to the webhook."""
    create_table_artifact(
        table=run_report.evaluation_rows(project),
        key="evaluation",
        description="candidate against base, by the independent evaluators",
    )
    markdown = run_report.decision_markdown(project, decision, data_version)
    create_markdown_artifact(markdown=markdown, key="promotion-decision", description=decision.summary())
    fields = run_report.decision_fields(decision, data_version)
    verdict = "promoted" if decision.promoted else "not promoted"
    notify.send(notify.message("promotion", f"{registry.POLICY_MODEL} v{decision.version} {verdict}", **fields))
