"""The sections of a model's lineage (tasks.lineage_report.lineage assembles them): data, validation,
index, reward model, evaluation, promotion and the model itself, each read from tags, artifacts or the
registry."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tasks.project import Project
from tasks.registry import DECISION_TAG, REASON_TAG, evaluation_report
from tasks.reward_registry import ACCURACY_KEY
from tasks.tracking import REWARD_MODEL, client

STAGE_TAG = "escrag.stage"  # as tasks.tracking.tracked_run writes it (a stage dep: not edited for a constant)
VALIDATION_REPORT = "validation/report.json"  # artifact paths of tasks.validation_log and tasks.evaluate_stage
VALIDATION_HTML = "validation/report.html"
EVALUATION_REPORT = "evaluation/evaluate.json"
MAX_ISSUES = 10  # validation issues copied into the lineage; report.json holds them all


def millis_iso(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds") if ms else ""


def _artifact_json(run_id: str, path: str) -> dict[str, Any] | None:
    """A JSON artifact of a run, or None when the run has none at `path`."""
    import mlflow
    from mlflow.environment_variables import MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR as PROGRESS_BAR
    from mlflow.exceptions import MlflowException

    shown = PROGRESS_BAR.get_raw()
    PROGRESS_BAR.set("false")  # no progress bar on the console for one small file
    try:
        with tempfile.TemporaryDirectory(prefix="escrag-lineage-") as tmp:
            local = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=path, dst_path=tmp)
            return json.loads(Path(local).read_text())
    except (MlflowException, OSError, ValueError):
        return None
    finally:
        if shown is None:
            PROGRESS_BAR.unset()
        else:
            PROGRESS_BAR.set(shown)


def data_section(tags: dict[str, str]) -> dict[str, Any]:
    """The data version (`data.md5`) and the md5 of each dataset (`data.<dataset>.md5`)."""
    per_dataset = [k for k in tags if k.startswith("data.") and k.endswith(".md5") and k != "data.md5"]
    datasets = {k[len("data.") : -len(".md5")]: tags[k] for k in per_dataset}
    return {"version": tags.get("data.md5", "unversioned"), "datasets": dict(sorted(datasets.items()))}


def validation_section(stages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    run_id = stages.get("validate", {}).get("run_id")
    if not run_id:
        return {"run_id": None, "success": None, "note": "no validation run with this data was found"}
    run = client().get_run(run_id)
    report = _artifact_json(run_id, VALIDATION_REPORT) or {}
    counts = {k.removeprefix("validation."): int(v) for k, v in run.data.metrics.items() if k.startswith("validation.")}
    return {
        "run_id": run_id,
        "success": run.data.tags.get("validation.success") == "true",
        "data_md5": run.data.tags.get("data.md5", "unversioned"),
        "counts": dict(sorted(counts.items())),
        "pii_policy": report.get("pii_policy"),
        "issues": len(report.get("issues", [])),
        "first_issues": report.get("issues", [])[:MAX_ISSUES],
        "report_json": f"{run.info.artifact_uri}/{VALIDATION_REPORT}",
        "report_html": f"{run.info.artifact_uri}/{VALIDATION_HTML}",
    }


def _index_tags(project: Project) -> dict[str, int]:
    """The LanceDB tags of the project's guidance table and the versions they name ({} without an index)."""
    folder = project.artifact("index")
    if not folder.is_dir():
        return {}
    import lancedb

    db = lancedb.connect(str(folder))
    table = project.params.index.table
    if table not in db.list_tables().tables:
        return {}
    return {name: int(tag["version"]) for name, tag in db.open_table(table).tags.list().items()}


def index_section(project: Project, tags: dict[str, str]) -> dict[str, Any]:
    version = tags.get("index.table_version", "none")
    stem = tags.get("data.md5", "unversioned").removesuffix(".dir")
    found = _index_tags(project)
    at_version = sorted(name for name, v in found.items() if str(v) == version)
    naming_data = sorted(name for name in found if stem in name)
    return {
        "table": project.params.index.table,
        "table_version": version,
        "data_tags": at_version or naming_data,
        "data_tag_at_version": bool(set(at_version) & set(naming_data)),
        "dvc_md5": tags.get("dvc.artifacts/index.md5", "not recorded"),
    }


def reward_section(tags: dict[str, str]) -> dict[str, Any]:
    version = tags.get("reward_model.version")
    if not version:
        return {"name": REWARD_MODEL, "version": None, "note": "the model run names no reward-model version"}
    mv = client().get_model_version(tags.get("reward_model.name", REWARD_MODEL), version)
    accuracy = mv.tags.get(ACCURACY_KEY)
    return {
        "name": mv.name,
        "version": str(mv.version),
        "run_id": mv.run_id,
        "heldout_pairwise_accuracy": float(accuracy) if accuracy else None,
        "n_heldout": mv.tags.get("n_heldout"),
        "selected": mv.tags.get("selected"),
        "aliases": sorted(mv.aliases),
    }


def _local_evaluation(project: Project, run_id: str) -> dict[str, Any] | None:
    try:
        report = evaluation_report(project)
    except (OSError, ValueError):
        return None
    return report if report.get("mlflow_run_id") == run_id else None


def evaluation_section(project: Project, run: Any) -> dict[str, Any]:
    """The run's evaluation report (the project's evaluate.json when it is this run's, else the logged copy)."""
    run_id = run.info.run_id
    report = _local_evaluation(project, run_id) or _artifact_json(run_id, EVALUATION_REPORT)
    metrics = {k: v for k, v in sorted(run.data.metrics.items()) if k.startswith("eval.")}
    return {
        "run_id": run_id if report else None,
        "report": report,
        "metrics": metrics,
        "crisis_suite": run.data.tags.get("eval.crisis_suite"),
    }


def promotion_section(project: Project, version: Any | None) -> dict[str, Any]:
    from tasks.promotion_history import read_history

    if version is None:
        return {"decision": None, "reason": None, "history": [], "note": "not a registered model version"}
    number = str(version.version)
    history = [
        e.as_dict()
        for e in read_history(project)
        if e.model == version.name and number in (e.to_version, e.from_version)
    ]
    latest = next((e for e in reversed(history) if e["to_version"] == number), None)
    return {
        "decision": version.tags.get(DECISION_TAG),  # the pipeline gate's decision, tagged on the version
        "reason": version.tags.get(REASON_TAG),
        "latest_decision": latest["decision"] if latest else None,  # the last decision on promoting it, manual too
        "latest_reason": latest["reason"] if latest else None,
        "aliases": sorted(version.aliases),
        "history": history,
    }


def model_section(argument: str, run: Any, version: Any | None) -> dict[str, Any]:
    """The MODEL argument, its run and, for a registered version, its name, aliases and source."""
    tags = run.data.tags
    section = {
        "argument": argument,
        "run_id": run.info.run_id,
        "stage": tags.get(STAGE_TAG),
        "started": millis_iso(run.info.start_time),
        "weights_sha256": tags.get("policy.weights_sha256"),
    }
    if version is None:
        return section | {"name": None, "version": None, "aliases": []}
    return section | {
        "name": version.name,
        "version": str(version.version),
        "aliases": sorted(version.aliases),
        "source": version.source,
        "registered": millis_iso(version.creation_timestamp),
    }


def runs_section(stages: dict[str, dict[str, Any]], report: dict[str, Any]) -> dict[str, str | None]:
    """The run behind each step, one id each."""
    runs = {stage: entry["run_id"] for stage, entry in stages.items()}
    runs["evaluate"] = report["evaluation"]["run_id"]
    runs["reward_model_version"] = report["reward_model"].get("run_id")
    decided = [e["evaluated_by"] for e in report["promotion"]["history"] if e.get("evaluated_by")]
    runs["promotion_evaluated_by"] = decided[-1] if decided else None
    return runs
