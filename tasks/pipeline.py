"""Prefect tasks: thin wrappers that give each unit of work retries, logs and a place in the flow."""

from __future__ import annotations

import logging
import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from tasks import dvc_ops, registry
from tasks.project import Project
from tasks.stages import STAGES


def _logger() -> logging.Logger | logging.LoggerAdapter:
    try:
        return get_run_logger()
    except Exception:  # noqa: BLE001 - outside a run context
        return logging.getLogger(__name__)


@task(name="restore-data", cache_policy=NO_CACHE)
def restore_data(project: Project) -> bool:
    return dvc_ops.restore_bundled_data(project.root)


@task(name="version-data", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE)
def version_data(project: Project) -> str:
    """dvc add data + push to the default remote; retried because remotes fail transiently."""
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


@task(name="register", cache_policy=NO_CACHE)
def register(project: Project) -> str:
    version = registry.register_candidate(project)
    _logger().info("%s version %s is the challenger", registry.POLICY_MODEL, version)
    return version


@task(name="promote", cache_policy=NO_CACHE)
def promote(project: Project, version: str) -> registry.Decision:
    decision = registry.promote(project, version)
    _logger().info(decision.summary())
    return decision
