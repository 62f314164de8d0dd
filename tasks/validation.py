"""Validate the raw data folder (knowledge, dialogues, preferences; ratings when present) with GX suites.

Every record is read strictly (tasks.jsonl_reader), flattened into pandas frames that keep each row's
file, line, record id and field prefix, and checked by one GX suite per frame. Every failure is mapped
back to file, line, record id and field. GX Data Docs and report.json are written under report_dir.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from models.schema import DATASETS, OPTIONAL_DATASETS
from tasks.jsonl_reader import DataError, Record, read_jsonl
from tasks.pii import ADDRESS_RE, EMAIL_RE, PHONE_RE, PII_PATTERNS, redact_pii
from tasks.validation_frames import _frames
from tasks.validation_html import write_html_report
from tasks.validation_suites import _expectations

__all__ = [
    "ADDRESS_RE",
    "EMAIL_RE",
    "PHONE_RE",
    "PII_PATTERNS",
    "PII_POLICIES",
    "ValidationIssue",
    "ValidationReport",
    "redact_pii",
    "validate_data",
]

logger = logging.getLogger(__name__)

PII_POLICIES = ("fail", "redact")
_MAX_LOGGED = 50  # issues logged one by one; report.json holds them all


@dataclass
class ValidationIssue:
    """One failed check, located by dataset, file, 1-based line, record id and field."""

    dataset: str
    file: str
    line: int
    record_id: str | None
    field: str | None
    expectation: str
    message: str
    severity: str = "error"  # "error" fails validation; "warning" (PII under pii_policy="redact") does not

    def __str__(self) -> str:
        rec = f" record {self.record_id!r}:" if self.record_id is not None else ""
        fld = f" field {self.field!r}:" if self.field is not None else ""
        return f"{self.file}:{self.line}:{rec}{fld} {self.message} [{self.severity}: {self.expectation}]"


@dataclass
class ValidationReport:
    success: bool
    issues: list[ValidationIssue]
    counts: dict[str, int]
    report_json: Path
    data_docs_index: Path | None = None


def _renamed(issue: ValidationIssue, shown_as: Mapping[str, str]) -> ValidationIssue:
    """The issue with staged paths replaced by the names the user knows (longest prefix first)."""
    file, message = issue.file, issue.message
    for prefix in sorted(shown_as, key=len, reverse=True):
        if file.startswith(prefix):
            file = shown_as[prefix] + file[len(prefix) :]
        message = message.replace(prefix, shown_as[prefix])
    return replace(issue, file=file, message=message)


# ---- running GX and mapping results back ------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A numpy scalar as a Python value; a whole float as an int (pandas turns 7 into 7.0)."""
    value = value.item() if hasattr(value, "item") else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _issues_from(result: Any, frame: pd.DataFrame, data_dir: Path) -> list[ValidationIssue]:
    """One issue per unexpected row of a failed expectation, located through the row's _row index."""
    config = result.expectation_config
    meta, kwargs = config.meta or {}, config.kwargs
    severity = "warning" if getattr(config.severity, "value", config.severity) == "warning" else "error"
    rows = [int(_plain(item["_row"])) for item in (result.result or {}).get("unexpected_index_list") or []]
    if not rows:  # an aggregate failure or an exception: there is no row to point at
        reason = (result.exception_info or {}).get("exception_message") or "expectation failed"
        logger.error("%s on %s failed without rows: %s", config.type, kwargs.get("column"), reason)
        dataset = str(frame["_dataset"].iloc[0])
        return [
            ValidationIssue(
                dataset, str(data_dir / dataset), 0, None, meta.get("field"), config.type, str(reason), severity
            )
        ]
    issues = []
    for r in rows:
        row = frame.iloc[r]
        value = _plain(row.get(kwargs.get("column", "value")))
        others = []
        if config.type == "expect_column_values_to_be_unique":
            same = frame.loc[(frame["id"] == value) & (frame["_row"] != r), ["_file", "_line"]]
            others = [f"{f}:{n}" for f, n in same.itertuples(index=False, name=None)]
        fields = {
            "value": repr(value),
            "length": len(value) if isinstance(value, str) else "?",
            "lo": _plain(row.get("lo")),
            "hi": _plain(row.get("hi")),
            "others": ", ".join(others),
            "conversation": row.get("_conversation"),
            "splits": row.get("_splits"),
        }
        name = ".".join(p for p in (row["_prefix"], meta.get("field")) if p) or None
        record_id = row["_id"] if isinstance(row["_id"], str) else None  # pandas turns a missing id into NaN
        issues.append(
            ValidationIssue(
                row["_dataset"],
                row["_file"],
                int(row["_line"]),
                record_id,
                name,
                config.type,
                meta.get("message", "failed").format(**fields),
                severity,
            )
        )
    return issues


def _run_suites(
    frames: dict[str, pd.DataFrame], report_dir: Path, data_dir: Path, **options: Any
) -> tuple[list[ValidationIssue], Path | None]:
    """Run one GX checkpoint per frame in a file context under report_dir/gx; return issues and Data Docs."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    gx_logger = logging.getLogger("great_expectations")
    if gx_logger.level == logging.NOTSET:  # GX logs every asset save at INFO
        gx_logger.setLevel(logging.WARNING)
    gx_root = report_dir / "gx"
    if gx_root.exists():  # a fresh project each run, so suites and docs match this run only
        shutil.rmtree(gx_root)
    context = gx.get_context(mode="file", project_root_dir=str(report_dir))
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("escrag")
    result_format = {"result_format": "COMPLETE", "unexpected_index_column_names": ["_row"]}
    issues: list[ValidationIssue] = []
    for name, frame in frames.items():
        batch = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe(name)
        suite = gx.ExpectationSuite(name=name, expectations=_expectations(name, **options))
        suite = context.suites.add(suite)
        definition = context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch, suite=suite))
        checkpoint = context.checkpoints.add(
            gx.Checkpoint(
                name=name,
                validation_definitions=[definition],
                result_format=result_format,
                actions=[gx.checkpoint.UpdateDataDocsAction(name="update_data_docs")],
            )
        )
        run = checkpoint.run(batch_parameters={"dataframe": frame})
        for validation in run.run_results.values():
            for result in validation.results:
                if not result.success:
                    issues.extend(_issues_from(result, frame, data_dir))
        logger.info("suite %s: %d rows, success=%s", name, len(frame), run.success)
    index = gx_root / "uncommitted" / "data_docs" / "local_site" / "index.html"
    return issues, index if frames and index.exists() else None


def _load(data_dir: Path, max_line_bytes: int) -> tuple[dict[str, list[Record]], list[ValidationIssue], int]:
    records: dict[str, list[Record]] = {}
    issues: list[ValidationIssue] = []
    n_files = 0
    for dataset in DATASETS:
        files = sorted((data_dir / dataset).glob("*.jsonl"))
        n_files += len(files)
        if not files and dataset not in OPTIONAL_DATASETS:
            issues.append(
                ValidationIssue(
                    dataset, str(data_dir / dataset), 0, None, None, "read_jsonl", "no *.jsonl files for this dataset"
                )
            )
        errors: list[DataError] = []
        records[dataset] = [
            rec for path in files for rec in read_jsonl(path, max_line_bytes=max_line_bytes, errors=errors)
        ]
        issues += [
            ValidationIssue(dataset, e.file, e.line, e.record_id, e.field, "read_jsonl", e.reason) for e in errors
        ]
    return records, issues, n_files


def validate_data(
    data_dir: Path,
    report_dir: Path,
    *,
    pii_policy: str = "fail",
    max_line_bytes: int = 1_000_000,
    text_min_chars: int = 2,
    text_max_chars: int = 4000,
    shown_as: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate data_dir/{knowledge,dialogues,preferences}/*.jsonl; write report.json and GX Data Docs.

    Nothing under data_dir is written. A dataset whose files do not parse is reported but not run
    through GX. With pii_policy="redact", personal data is a warning (to be removed with redact_pii
    before versioning) instead of a failure. `shown_as` maps path prefixes (a staged copy) to what the
    user knows them as (the source file), in issues and in the reports.
    """
    if pii_policy not in PII_POLICIES:
        raise ValueError(f"pii_policy must be one of {PII_POLICIES}, got {pii_policy!r}")
    data_dir, report_dir = Path(data_dir), Path(report_dir)
    if report_dir.resolve().is_relative_to(data_dir.resolve()):
        raise ValueError(f"report_dir {report_dir} must not lie inside data_dir {data_dir}")
    report_dir.mkdir(parents=True, exist_ok=True)
    records, issues, n_files = _load(data_dir, max_line_bytes)
    broken = {i.dataset for i in issues}
    for dataset in sorted(broken):
        logger.warning("dataset %s has read errors: not validated with Great Expectations", dataset)
    severity = "warning" if pii_policy == "redact" else "critical"
    gx_issues, docs = _run_suites(
        _frames(records, broken),
        report_dir,
        data_dir,
        pii_severity=severity,
        text_min=text_min_chars,
        text_max=text_max_chars,
    )
    issues = [_renamed(i, shown_as or {}) for i in issues + gx_issues]
    issues = sorted(issues, key=lambda i: (i.file, i.line, i.field or "", i.expectation))
    errors = sum(i.severity == "error" for i in issues)
    counts = {d: len(r) for d, r in records.items()} | {
        "files": n_files,
        "errors": errors,
        "warnings": len(issues) - errors,
    }
    report = ValidationReport(errors == 0, issues, counts, report_dir / "report.json", docs)
    report.report_json.write_text(
        json.dumps(
            {
                "success": report.success,
                "pii_policy": pii_policy,
                "counts": counts,
                "data_docs": str(docs.relative_to(report_dir)) if docs else None,
                "issues": [asdict(i) for i in issues],
            },
            indent=2,
            default=str,
        )
        + "\n",
        encoding="utf-8",
    )
    write_html_report(report, report_dir / "report.html")
    for issue in issues[:_MAX_LOGGED]:
        (logger.error if issue.severity == "error" else logger.warning)("%s", issue)
    if len(issues) > _MAX_LOGGED:
        logger.error("... and %d more issues in %s", len(issues) - _MAX_LOGGED, report.report_json)
    logger.info("validation %s: %s", "passed" if report.success else "failed", counts)
    return report
