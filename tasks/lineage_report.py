"""A model's whole lineage, read back from the tracking store: what `escrag lineage` and `escrag diff` show.

MODEL is `models:/NAME/VERSION`, `models:/NAME@ALIAS` or an MLflow run id. The registered version links to
its run (the GRPO run, which the `evaluate` stage also logs into); that run carries the lineage tags of
tasks/lineage.py (git commit, data md5s, dvc.lock md5s of the upstream outputs, index table version,
base-model hash) and names its reward-model version.

The runs of a pipeline are not nested under a parent run and share no run-level id: a stage that `dvc.lock`
says is current is skipped and leaves no new run, so a model's inputs may come from runs of an earlier
`escrag run`. Each stage's run is found the way DVC decides what is current: the latest finished run of that
stage, started no later than the model's run, whose recorded inputs (the lineage tags of the stage's
`dvc.lock` deps) equal the model run's. The reward model is linked exactly, through the version the model
run names.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tasks.dvc_ops import lock_entry, lock_out_md5
from tasks.lineage_diff import diff_lineage
from tasks.project import Project
from tasks.registry import DECISION_TAG, REASON_TAG, UnknownModelError, champion_version, evaluation_report, run_of
from tasks.reward_registry import ACCURACY_KEY
from tasks.tracking import CHAMPION, POLICY_MODEL, REWARD_MODEL, client, configure

STAGE_TAG = "escrag.stage"  # as tasks.tracking.tracked_run writes it (a stage dep: not edited for a constant)
RUN_ID = re.compile(r"[0-9a-f]{32}")
MODEL_URI = re.compile(r"models:/(?P<name>[^/@\s]+)(?:/(?P<version>\d+)|@(?P<alias>[A-Za-z0-9_-]+))")
VALIDATION_REPORT = "validation/report.json"  # artifact paths of tasks.validation_log and tasks.evaluate_stage
VALIDATION_HTML = "validation/report.html"
EVALUATION_REPORT = "evaluation/evaluate.json"
# `validate` records the data md5s (in dvc.lock, then data.dvc) only after its run: the run's own tags name
# the data version before it. Its run is the latest finished validate run before the model's.
LINKED_BY_TIME = ("validate",)
MAX_ISSUES = 10  # validation issues copied into the lineage; report.json holds them all
FORM = "expected models:/NAME/VERSION, models:/NAME@ALIAS or a 32-character MLflow run id"


class ModelArgumentError(ValueError):
    """A MODEL argument that is malformed or names no registered version, alias or run."""


@dataclass(frozen=True)
class ModelRef:
    """A parsed MODEL argument: a registry URI (name with version or alias) or a run id."""

    text: str
    name: str | None = None
    version: str | None = None
    alias: str | None = None
    run_id: str | None = None


def parse_model(text: str) -> ModelRef:
    """Parse MODEL; a malformed one raises `ModelArgumentError` naming it."""
    text = text.strip()
    if match := MODEL_URI.fullmatch(text):
        return ModelRef(text, match["name"], match["version"], match["alias"])
    if RUN_ID.fullmatch(text):
        return ModelRef(text, run_id=text)
    raise ModelArgumentError(f"{text!r}: not a model URI or run id ({FORM})")


# ---------------------------------------------------------------- resolving MODEL


def resolve(ref: ModelRef) -> tuple[Any, Any | None]:
    """The run behind `ref` and its registered model version (the first one registered from a bare run id)."""
    try:
        run, version = run_of(ref.text)
    except UnknownModelError as error:
        raise ModelArgumentError(str(error).splitlines()[0]) from None
    if version is not None:
        return run, client().get_model_version(ref.name, version)
    versions = client().search_model_versions(f"run_id='{run.info.run_id}'")
    return run, min(versions, key=lambda mv: int(mv.version)) if versions else None


# ---------------------------------------------------------------- stage runs


def dep_tag(path: str) -> str:
    """The lineage tag that records a `dvc.lock` dep: `data.md5`, `data.<dataset>.md5` or `dvc.<path>.md5`."""
    if path == "data":
        return "data.md5"
    return f"data.{path.removeprefix('data/')}.md5" if path.startswith("data/") else f"dvc.{path}.md5"


def inputs_agree(stage_tags: dict[str, str], model_tags: dict[str, str], dep_paths: list[str]) -> bool:
    """True when every recorded input of the stage (its deps' lineage tags) equals the model run's."""
    keys = [dep_tag(p) for p in dep_paths]
    return all(stage_tags[k] == model_tags[k] for k in keys if k in stage_tags and k in model_tags)


def _millis_iso(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds") if ms else ""


def linked_run(project: Project, model_run: Any, stage: str) -> Any | None:
    """The latest finished run of `stage`, not after the model's run, whose recorded inputs match it."""
    runs = client().search_runs(
        [model_run.info.experiment_id],
        filter_string=f"tags.`{STAGE_TAG}` = '{stage}' and attributes.status = 'FINISHED' "
        f"and attributes.start_time <= {model_run.info.start_time}",
        order_by=["attributes.start_time DESC"],
        max_results=200,
    )
    deps = [] if stage in LINKED_BY_TIME else [d["path"] for d in lock_entry(project.root, stage).get("deps", [])]
    return next((r for r in runs if inputs_agree(r.data.tags, model_run.data.tags, deps)), None)


def _reward_run(model_run: Any) -> Any | None:
    version = model_run.data.tags.get("reward_model.version")
    if not version:
        return None
    return client().get_run(client().get_model_version(REWARD_MODEL, version).run_id)


def _inputs(run: Any) -> list[dict[str, str]]:
    inputs = getattr(run, "inputs", None)
    rows = []
    for item in getattr(inputs, "dataset_inputs", None) or []:
        context = next((t.value for t in item.tags if t.key == "mlflow.data.context"), "")
        rows.append({"name": item.dataset.name, "digest": item.dataset.digest, "context": context})
    return rows


def _stage_entry(project: Project, stage: str, run: Any | None, linked_by: str, model_tags: dict) -> dict[str, Any]:
    outputs = {p: model_tags.get(f"dvc.{p}.md5") for p in lock_out_md5(project.root, stage)}  # None: not recorded
    if run is None:
        return {"run_id": None, "linked_by": linked_by, "params": {}, "inputs": [], "outputs": outputs}
    return {
        "run_id": run.info.run_id,
        "linked_by": linked_by,
        "started": _millis_iso(run.info.start_time),
        "git_commit": run.data.tags.get("git.commit", "unknown"),
        "params": dict(sorted(run.data.params.items())),
        "inputs": _inputs(run),
        "outputs": outputs,
    }


def _stage_run(project: Project, model_run: Any, stage: str) -> tuple[Any | None, str]:
    model_stage = model_run.data.tags.get(STAGE_TAG)
    if stage == model_stage:
        return model_run, "the model's own run"
    if stage == "reward_model" and (run := _reward_run(model_run)) is not None:
        return run, "the reward-model version the model run names (tag reward_model.version)"
    if (run := linked_run(project, model_run, stage)) is not None:
        if stage in LINKED_BY_TIME:
            return run, "latest finished run of the stage before the model's run"
        return run, "latest finished run of the stage before the model's run whose recorded inputs match it"
    if client().search_runs([model_run.info.experiment_id], f"tags.`{STAGE_TAG}` = '{stage}'", max_results=1):
        return None, "no run of this stage before the model's run has the model run's inputs"
    return None, "the stage logs no MLflow run: its outputs are identified by their dvc.lock md5s"


def stage_runs(project: Project, model_run: Any) -> dict[str, dict[str, Any]]:
    """Every pipeline stage up to the model run's own, with the run that made it, its params and inputs."""
    from tasks.stages import PIPELINE_ORDER

    model_stage = model_run.data.tags.get(STAGE_TAG)
    stages = PIPELINE_ORDER[: PIPELINE_ORDER.index(model_stage) + 1] if model_stage in PIPELINE_ORDER else ()
    entries = {}
    for stage in stages:
        run, linked_by = _stage_run(project, model_run, stage)
        entries[stage] = _stage_entry(project, stage, run, linked_by, model_run.data.tags)
    return entries


# ---------------------------------------------------------------- sections


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


def model_section(ref: ModelRef, run: Any, version: Any | None) -> dict[str, Any]:
    tags = run.data.tags
    section = {
        "argument": ref.text,
        "run_id": run.info.run_id,
        "stage": tags.get(STAGE_TAG),
        "started": _millis_iso(run.info.start_time),
        "weights_sha256": tags.get("policy.weights_sha256"),
    }
    if version is None:
        return section | {"name": None, "version": None, "aliases": []}
    return section | {
        "name": version.name,
        "version": str(version.version),
        "aliases": sorted(version.aliases),
        "source": version.source,
        "registered": _millis_iso(version.creation_timestamp),
    }


def runs_section(stages: dict[str, dict[str, Any]], report: dict[str, Any]) -> dict[str, str | None]:
    """The run behind each step, one id each."""
    runs = {stage: entry["run_id"] for stage, entry in stages.items()}
    runs["evaluate"] = report["evaluation"]["run_id"]
    runs["reward_model_version"] = report["reward_model"].get("run_id")
    decided = [e["evaluated_by"] for e in report["promotion"]["history"] if e.get("evaluated_by")]
    runs["promotion_evaluated_by"] = decided[-1] if decided else None
    return runs


def lineage(project: Project, model: str, *, against_champion: bool = True) -> dict[str, Any]:
    """The whole chain behind MODEL as one JSON-ready dict; `against_champion` adds the diff to the champion."""
    configure(project)
    ref = parse_model(model)
    run, version = resolve(ref)
    tags = run.data.tags
    stages = stage_runs(project, run)
    report: dict[str, Any] = {
        "model": model_section(ref, run, version),
        "code": {"git_commit": tags.get("git.commit", "unknown"), "git_dirty": tags.get("git.dirty") == "true"},
        "data": data_section(tags),
        "validation": validation_section(stages),
        "index": index_section(project, tags),
        "base_model": {"hash": tags.get("base_model.hash", "unknown")},
        "upstream_outputs": {
            k[4:-4]: v for k, v in sorted(tags.items()) if k.startswith("dvc.") and k.endswith(".md5")
        },
        "stages": stages,
        "reward_model": reward_section(tags),
        "evaluation": evaluation_section(project, run),
        "promotion": promotion_section(project, version),
    }
    report["runs"] = runs_section(stages, report)
    report = finite(report)
    if against_champion:
        report["champion_diff"] = champion_diff(project, report)
    return report


def finite(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None, so the JSON is strict."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def champion_diff(project: Project, report: dict[str, Any]) -> dict[str, Any]:
    """What differs between this model and the current champion of escrag-policy."""
    current = champion_version()
    if current is None:
        return {"champion": None, "note": f"{POLICY_MODEL} has no {CHAMPION} yet"}
    model = report["model"]
    if model.get("name") == POLICY_MODEL and model.get("version") == current:
        return {"champion": current, "is_champion": True, "identical": True, "differences": 0}
    champion = lineage(project, f"models:/{POLICY_MODEL}@{CHAMPION}", against_champion=False)
    return {"champion": current, "is_champion": False, **diff_lineage(champion, report)}
