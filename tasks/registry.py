"""The policy in the MLflow registry: register the candidate, read and move `champion`, fetch a version.

The gated, serialised and audited promotion that moves the alias is tasks/promotion.py."""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.project import Project
from tasks.tracking import CHALLENGER, CHAMPION, POLICY_MODEL, client, configure

logger = logging.getLogger(__name__)

DECISION_TAG, REASON_TAG = "promotion.decision", "promotion.reason"

# Written out because inferring them imports torchvision, which this torch build lacks.
PIP_REQUIREMENTS = ["torch==2.13.0", "transformers==5.24.0", "safetensors"]


@dataclass(frozen=True)
class Decision:
    version: str
    promoted: bool
    reason: str
    champion_version: str | None
    reused: bool = False

    def summary(self) -> str:
        verdict = "promoted to champion" if self.promoted else "not promoted"
        champion = "champion: none"
        if self.champion_version:
            champion = f"champion: {POLICY_MODEL} version {self.champion_version}"
        return f"{POLICY_MODEL} version {self.version} {verdict}: {self.reason}\n{champion}"


def evaluation_report(project: Project) -> dict[str, Any]:
    """The `evaluate` stage's report (artifacts/reports/evaluate.json)."""
    return json.loads((project.reports / "evaluate.json").read_text())


def register_candidate(project: Project) -> str:
    """Log the policy to its GRPO run and register it as `challenger`; reuse an existing version."""
    import mlflow

    configure(project)
    run_id = evaluation_report(project)["mlflow_run_id"]
    existing = client().search_model_versions(f"name='{POLICY_MODEL}' and run_id='{run_id}'")
    if existing:  # the first version registered from this run (others may point at its model too)
        first = min(existing, key=lambda mv: int(mv.version))
        logger.info("run %s is already %s version %s", run_id, POLICY_MODEL, first.version)
        return str(first.version)
    from tasks.policy_pyfunc import log_policy_model

    with mlflow.start_run(run_id=run_id) as run:
        index_version = run.data.tags.get("index.table_version", "none")
        if not index_version.isdigit():
            raise ValueError(f"run {run_id} names no index table version (tag index.table_version={index_version!r})")
        info = log_policy_model(project, project.artifact("policy"), int(index_version), POLICY_MODEL)
    version = str(info.registered_model_version)
    client().set_registered_model_alias(POLICY_MODEL, CHALLENGER, version)
    return version


def champion_version() -> str | None:
    """The version `champion` points at, or None when no model was promoted yet."""
    try:
        return str(client().get_model_version_by_alias(POLICY_MODEL, CHAMPION).version)
    except Exception:  # noqa: BLE001 - MLflow raises a generic error when the alias is unset
        return None


def move_champion(version: str) -> None:
    """Point `champion` at `version`: the one place the alias moves."""
    client().set_registered_model_alias(POLICY_MODEL, CHAMPION, version)


def tag_decision(version: str, decision: str, reason: str) -> None:
    """The pipeline gate's decision on `version`: what `escrag run` reads back instead of deciding again."""
    client().set_model_version_tag(POLICY_MODEL, version, DECISION_TAG, decision)
    client().set_model_version_tag(POLICY_MODEL, version, REASON_TAG, reason)


class UnknownModelError(LookupError):
    """A model argument that names no registered version, alias or run."""


def run_of(model: str) -> tuple[Any, str | None]:
    """The MLflow run behind `model` and its registered version (None for a bare run id).

    `model` is `models:/NAME/VERSION`, `models:/NAME@ALIAS` or a run id.
    """
    from mlflow.exceptions import MlflowException

    try:
        if model.startswith("models:/"):
            name, _, ref = model.removeprefix("models:/").partition("@")
            if ref:
                found = client().get_model_version_by_alias(name, ref)
            else:
                name, _, version = name.partition("/")
                found = client().get_model_version(name, version)
            return client().get_run(found.run_id), str(found.version)
        return client().get_run(model), None
    except MlflowException as error:
        raise UnknownModelError(f"{model}: no such model version, alias or run ({error.message[:200]})") from None


def version_uri(version: str) -> str:
    return f"models:/{POLICY_MODEL}/{version}"


@contextlib.contextmanager
def downloaded(uri: str) -> Iterator[Path]:
    """The policy folder of a registered model (`models:/NAME/VERSION` or `models:/NAME@ALIAS`), in a
    temporary folder: the `policy` artifact of a servable model, or a bare transformers pipeline re-saved
    (versions registered before serving was built)."""
    import mlflow
    import yaml

    from tasks.policy_pyfunc import POLICY

    run_of(uri)  # an unknown name, version or alias: UnknownModelError, before any download
    with tempfile.TemporaryDirectory(prefix="escrag-policy-") as tmp:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=tmp))
        flavors = yaml.safe_load((local / "MLmodel").read_text())["flavors"]
        if "transformers" in flavors:
            components = mlflow.transformers.load_model(str(local), return_type="components")
            folder = Path(tmp) / "resaved"
            components["model"].save_pretrained(folder)
            components["tokenizer"].save_pretrained(folder)
            yield folder
            return
        artifacts = flavors["python_function"].get("artifacts", {})
        if POLICY not in artifacts:
            raise UnknownModelError(f"{uri}: not an escrag policy (no {POLICY!r} artifact)")
        yield local / artifacts[POLICY]["path"]
