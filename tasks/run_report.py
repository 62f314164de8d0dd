"""What a person reads about a retrain: the evaluation table and the promotion decision, with MLflow links.

The same text goes to the Prefect UI (markdown artifacts on the flow run) and to the team's webhook.
"""

from __future__ import annotations

import json
from typing import Any

from tasks.project import Project
from tasks.registry import Decision
from tasks.tracking import EXPERIMENT, POLICY_MODEL


def _ui_base(tracking_uri: str) -> str | None:
    """The MLflow UI address when tracking goes to a server; a SQLite store has no UI address."""
    return tracking_uri.rstrip("/") if tracking_uri.startswith(("http://", "https://")) else None


def mlflow_links(project: Project, run_id: str, version: str | None) -> dict[str, str]:
    """Links to the GRPO run and the registered version (plain ids when tracking is a local store)."""
    import mlflow

    base = _ui_base(project.tracking_uri)
    if base is None:
        return {"run": run_id, **({"model version": f"{POLICY_MODEL} v{version}"} if version else {})}
    experiment = mlflow.get_experiment_by_name(EXPERIMENT)
    links = {"run": f"{base}/#/experiments/{experiment.experiment_id}/runs/{run_id}"}
    if version:
        links["model version"] = f"{base}/#/models/{POLICY_MODEL}/versions/{version}"
    return links


def evaluation_table(evaluation: dict[str, Any]) -> str:
    """Candidate against base, one metric a row, as a markdown table."""
    candidate, base = evaluation["candidate"], evaluation["base"]
    rows = [f"| {k} | {candidate[k]:.3f} | {base[k]:.3f} | {candidate[k] - base[k]:+.3f} |" for k in candidate]
    return "\n".join(["| metric | candidate | base | delta |", "|---|---:|---:|---:|", *rows])


def decision_markdown(project: Project, decision: Decision, data_version: str) -> str:
    evaluation = json.loads((project.reports / "evaluate.json").read_text())
    links = mlflow_links(project, evaluation["mlflow_run_id"], decision.version)
    verdict = "**promoted** to champion" if decision.promoted else "**not promoted**"
    lines = [
        f"## {POLICY_MODEL} version {decision.version}: {verdict}",
        "",
        f"Reason: {decision.reason}",
        "",
        f"Champion now: {decision.champion_version or 'none'} · data version `{data_version}`",
        "",
        evaluation_table(evaluation),
        "",
        *(f"- MLflow {name}: {target}" for name, target in links.items()),
    ]
    return "\n".join(lines)


def decision_fields(decision: Decision, data_version: str) -> dict[str, Any]:
    return {
        "model": POLICY_MODEL,
        "version": decision.version,
        "promoted": decision.promoted,
        "reason": decision.reason,
        "champion_version": decision.champion_version,
        "data_version": data_version,
    }
