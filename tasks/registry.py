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
    from transformers import pipeline

    policy = pipeline("text-generation", model=str(project.artifact("policy")), device=project.compute.device)
    with mlflow.start_run(run_id=run_id):
        info = mlflow.transformers.log_model(
            transformers_model=policy,
            name="policy",
            pip_requirements=PIP_REQUIREMENTS,
            registered_model_name=POLICY_MODEL,
        )
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
    """A registered policy (`models:/NAME/VERSION` or `models:/NAME@ALIAS`) saved to a temporary folder."""
    import mlflow

    components = mlflow.transformers.load_model(uri, return_type="components")
    with tempfile.TemporaryDirectory(prefix="escrag-policy-") as tmp:
        components["model"].save_pretrained(tmp)
        components["tokenizer"].save_pretrained(tmp)
        yield Path(tmp)
