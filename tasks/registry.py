"""Register the candidate policy and promote it to `champion` only when it beats the current one."""

from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

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


def _evaluation(project: Project) -> dict:
    return json.loads((project.reports / "evaluate.json").read_text())


def register_candidate(project: Project) -> str:
    """Log the policy to its GRPO run and register it as `challenger`; reuse an existing version."""
    import mlflow

    configure(project)
    run_id = _evaluation(project)["mlflow_run_id"]
    existing = client().search_model_versions(f"name='{POLICY_MODEL}' and run_id='{run_id}'")
    if existing:
        logger.info("run %s is already %s version %s", run_id, POLICY_MODEL, existing[0].version)
        return str(existing[0].version)
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


def _champion_version() -> str | None:
    try:
        return str(client().get_model_version_by_alias(POLICY_MODEL, CHAMPION).version)
    except Exception:  # noqa: BLE001 - MLflow raises a generic error when the alias is unset
        return None


def _evaluate_champion(project: Project, version: str) -> dict:
    """Re-evaluate the champion on today's eval contexts, so both are judged on the same data."""
    import mlflow

    from tasks.evaluate_stage import evaluate_models

    components = mlflow.transformers.load_model(f"models:/{POLICY_MODEL}/{version}", return_type="components")
    with tempfile.TemporaryDirectory(prefix="escrag-champion-") as tmp:
        components["model"].save_pretrained(tmp)
        components["tokenizer"].save_pretrained(tmp)
        summaries, _ = evaluate_models(project, {"champion": Path(tmp)})
    return summaries["champion"]


def gate(project: Project, candidate: dict, base: dict, champion: dict | None) -> tuple[bool, str]:
    """The promotion gate of params.yaml: beat base (and champion) on the metric by more than min_delta."""
    settings = project.params.promote
    metric, delta = settings.metric, settings.min_delta
    if metric not in candidate:
        raise KeyError(f"params.yaml: promote.metric: {metric!r} is not an evaluation metric ({', '.join(candidate)})")
    reasons, passed = [], True
    for name, other in (("base", base), ("champion", champion)):
        if other is None:
            continue
        ok = candidate[metric] > other[metric] + delta
        passed &= ok
        reasons.append(f"{metric} {candidate[metric]:.3f} {'>' if ok else '<='} {name} {other[metric]:.3f} + {delta}")
    fmt_ok = candidate["format_compliance"] >= settings.min_format_compliance
    passed &= fmt_ok
    reasons.append(
        f"format compliance {candidate['format_compliance']:.2f} "
        f"{'>=' if fmt_ok else '<'} {settings.min_format_compliance}"
    )
    return passed, "; ".join(reasons)


def promote(project: Project, version: str) -> Decision:
    """Move `champion` to `version` if the gate passes; the decision is tagged on the version once."""
    configure(project)
    registry = client()
    tags = registry.get_model_version(POLICY_MODEL, version).tags
    current = _champion_version()
    if DECISION_TAG in tags:
        return Decision(version, tags[DECISION_TAG] == "promoted", tags[REASON_TAG], current, reused=True)
    evaluation = _evaluation(project)
    champion = _evaluate_champion(project, current) if current and current != version else None
    passed, reason = gate(project, evaluation["candidate"], evaluation["base"], champion)
    if passed:
        registry.set_registered_model_alias(POLICY_MODEL, CHAMPION, version)
        current = version
    registry.set_model_version_tag(POLICY_MODEL, version, DECISION_TAG, "promoted" if passed else "rejected")
    registry.set_model_version_tag(POLICY_MODEL, version, REASON_TAG, reason)
    return Decision(version, passed, reason, current)
