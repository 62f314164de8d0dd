"""Log a validation report (report.json, report.html and the Great Expectations Data Docs) to MLflow.

The run carries the lineage tags, so `data.md5` names the data version the report describes; an
auditor finds every validation of a version with `tags."data.md5" = '<md5>'`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tasks.project import Project
from tasks.tracking import tracked_run

if TYPE_CHECKING:
    from tasks.validation import ValidationReport

logger = logging.getLogger(__name__)


def log_validation_report(project: Project, report: ValidationReport, stage: str) -> str:
    """One MLflow run for one validation: counts as metrics, the report and the Data Docs as artifacts."""
    import mlflow

    report_dir, success = report.report_json.parent, report.success

    with tracked_run(project, stage) as run:
        mlflow.set_tag("validation.success", str(success).lower())
        mlflow.log_metrics({f"validation.{name}": float(n) for name, n in report.counts.items()})
        for name in ("report.json", "report.html"):
            if (report_dir / name).exists():
                mlflow.log_artifact(str(report_dir / name), artifact_path="validation")
        if report.data_docs_index is not None and report.data_docs_index.exists():
            mlflow.log_artifacts(str(report.data_docs_index.parent), artifact_path="validation/data_docs")
        if not success:
            mlflow.end_run(status="FAILED")
    logger.info("validation report logged to MLflow run %s", run.info.run_id)
    return run.info.run_id
