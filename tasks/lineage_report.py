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

import math
import re
from dataclasses import dataclass
from typing import Any

from tasks.dvc_ops import lock_entry, lock_out_md5
from tasks.lineage_diff import diff_lineage
from tasks.lineage_sections import (
    STAGE_TAG,
    data_section,
    evaluation_section,
    index_section,
    millis_iso,
    model_section,
    promotion_section,
    reward_section,
    runs_section,
    validation_section,
)
from tasks.project import Project
from tasks.registry import UnknownModelError, champion_version, run_of
from tasks.tracking import CHAMPION, POLICY_MODEL, REWARD_MODEL, client, configure

RUN_ID = re.compile(r"[0-9a-f]{32}")
MODEL_URI = re.compile(r"models:/(?P<name>[^/@\s]+)(?:/(?P<version>\d+)|@(?P<alias>[A-Za-z0-9_-]+))")
# `validate` records the data md5s (in dvc.lock, then data.dvc) only after its run: the run's own tags name
# the data version before it. Its run is the latest finished validate run before the model's.
LINKED_BY_TIME = ("validate",)
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
        "started": millis_iso(run.info.start_time),
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


def lineage(project: Project, model: str, *, against_champion: bool = True) -> dict[str, Any]:
    """The whole chain behind MODEL as one JSON-ready dict; `against_champion` adds the diff to the champion."""
    configure(project)
    ref = parse_model(model)
    run, version = resolve(ref)
    tags = run.data.tags
    stages = stage_runs(project, run)
    report: dict[str, Any] = {
        "model": model_section(ref.text, run, version),
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
