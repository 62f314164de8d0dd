"""What a person reads about a retrain: the evaluation table and the promotion decision, with MLflow links.

The same text goes to the Prefect UI (markdown artifacts on the flow run) and to the team's webhook.
"""

from __future__ import annotations

from typing import Any

from tasks.project import Project
from tasks.registry import Decision, evaluation_report
from tasks.tracking import EXPERIMENT, POLICY_MODEL


def mlflow_links(project: Project, run_id: str, version: str | None) -> dict[str, str]:
    """Links to the GRPO run and the registered version (plain ids when tracking is a local store)."""
    import mlflow

    if not project.tracks_to_server:  # a SQLite store has no UI address
        return {"run": run_id, **({"model version": f"{POLICY_MODEL} v{version}"} if version else {})}
    experiment = mlflow.get_experiment_by_name(EXPERIMENT)
    base = project.tracking_uri.rstrip("/")
    links = {"run": f"{base}/#/experiments/{experiment.experiment_id}/runs/{run_id}"}
    if version:
        links["model version"] = f"{base}/#/models/{POLICY_MODEL}/versions/{version}"
    return links


def evaluation_rows(project: Project) -> list[dict[str, Any]]:
    """Candidate against base, one metric a row (the Prefect table artifact); the win-rate row is the
    candidate's over base, against 0.5 (no difference)."""
    evaluation = evaluation_report(project)
    candidate, base = evaluation["models"]["candidate"], evaluation["models"]["base"]
    shared = [k for k, v in candidate.items() if isinstance(v, float) and isinstance(base.get(k), float)]
    rows = [
        {"metric": k, "candidate": round(candidate[k], 4), "base": round(base[k], 4),
         "delta": round(candidate[k] - base[k], 4)}
        for k in shared
    ]  # fmt: skip
    rate = evaluation["win_rates"]["base"]["win_rate"]
    return [{"metric": "win_rate", "candidate": round(rate, 4), "base": 0.5, "delta": round(rate - 0.5, 4)}, *rows]


def evaluation_table(rows: list[dict[str, Any]]) -> str:
    """The same rows as a markdown table."""
    lines = [f"| {r['metric']} | {r['candidate']:.3f} | {r['base']:.3f} | {r['delta']:+.3f} |" for r in rows]
    return "\n".join(["| metric | candidate | base | delta |", "|---|---:|---:|---:|", *lines])


def decision_markdown(project: Project, decision: Decision, data_version: str) -> str:
    links = mlflow_links(project, evaluation_report(project)["mlflow_run_id"], decision.version)
    verdict = "**promoted** to champion" if decision.promoted else "**not promoted**"
    lines = [
        f"## {POLICY_MODEL} version {decision.version}: {verdict}",
        "",
        "Reason:",
        "",
        *(f"- {line}" for line in decision.reason.splitlines()),
        "",
        f"Champion now: {decision.champion_version or 'none'} · data version `{data_version}`",
        "",
        evaluation_table(evaluation_rows(project)),
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
