"""Stages that prepare inputs: validate the data, import the base model, build the guidance index."""

from __future__ import annotations

import json
import logging

from models.base_model import import_base_model
from models.records import load_records
from tasks.project import Project

logger = logging.getLogger(__name__)


class DataValidationError(RuntimeError):
    """The data failed its Great Expectations suites; nothing downstream may run."""


def validate(project: Project) -> dict:
    from tasks.validation import validate_data
    from tasks.validation_log import log_validation_report

    settings = project.params.validate_
    report = validate_data(
        project.data,
        project.artifact("validation"),
        pii_policy=settings.pii_policy,
        max_line_bytes=settings.max_line_bytes,
        text_max_chars=settings.text_max_chars,
    )
    log_validation_report(project, report, "validate")
    if not report.success:
        shown = "\n".join(f"  {issue}" for issue in report.issues[:20])
        more = f"\n  … and {len(report.issues) - 20} more" if len(report.issues) > 20 else ""
        raise DataValidationError(
            f"data validation failed ({len(report.issues)} issues):\n{shown}{more}\n"
            f"report: {report.report_json.with_name('report.html')}\ndata docs: {report.data_docs_index}"
        )
    return {"records": report.counts, "report": str(report.report_json)}


def base_model(project: Project) -> dict:
    settings = project.params.base_model
    out = import_base_model(settings.source, settings.gguf_file, project.artifact("base_model"))
    return {"path": str(out)}


def index(project: Project) -> dict:
    from models.embedder import load_embedder
    from models.retriever import sync_index
    from tasks.dvc_ops import data_md5

    settings = project.params.index
    out = project.artifact("index")
    info = sync_index(
        load_records(project.data, "knowledge"),
        out,
        settings.table,
        load_embedder(project.compute),
        batch_size=settings.batch_size,
        ann_threshold=settings.ann_threshold,
        data_version=data_md5(project.root),
    )
    meta = {
        "table": info.table,
        "version": info.version,
        "rows": info.rows,
        "embedded": info.embedded,
        "deleted": info.deleted,
        "ann_index": info.ann,
        "data_version": data_md5(project.root),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta
