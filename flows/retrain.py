"""The `retrain` flow: from versioned data to a promoted model. It only wires tasks together."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from tasks import pipeline
from tasks.project import Project
from tasks.registry import Decision
from tasks.stages import PIPELINE_ORDER


@flow(name="retrain", log_prints=False)
def retrain(project_dir: str | None = None) -> Decision:
    """Validate → version → base model → index → reward model → SFT → GRPO → evaluate → register → promote."""
    project = Project.discover(Path(project_dir) if project_dir else None)
    project.params  # noqa: B018 - validate params.yaml before any work
    pipeline.restore_data(project)
    pipeline.run_stage(project, "validate")
    pipeline.version_data(project)
    for name in PIPELINE_ORDER[1:]:
        pipeline.run_stage(project, name)
    version = pipeline.register(project)
    return pipeline.promote(project, version)
