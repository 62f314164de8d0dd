"""Retrieval evaluation: strategy-hit@1/@5 and MRR for vector, full-text and hybrid search, against random."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from models.records import dialogues_of_split, load_records
from tasks.project import Project
from tasks.tracking import tracked_run
from tasks.train_stages import write_json

logger = logging.getLogger(__name__)

MODES = ("vector", "fts", "hybrid")


def retrieval_table(project: Project, dialogues: list[dict[str, Any]], k: int = 5) -> dict[str, dict[str, float]]:
    from models.retrieval_eval import compare_modes, probes
    from tasks.guidance import open_retriever

    retriever = open_retriever(project)
    searches = {mode: (lambda q, depth, m=mode: retriever.search(q, k=depth, mode=m)) for mode in MODES}
    strategies = [r["strategy"] for r in load_records(project.data, "knowledge")]
    cap = project.params.retrieval.max_per_strategy
    return compare_modes(searches, strategies, probes(dialogues), k=k, seed=project.params.seed, max_per_strategy=cap)


def render_table(table: dict[str, dict[str, float]]) -> str:
    lines = [f"{'mode':<14} {'hit@1':>7} {'hit@5':>7} {'MRR':>7} {'turns':>6}"]
    for mode, row in table.items():
        lines.append(f"{mode:<14} {row['hit@1']:>7.3f} {row['hit@5']:>7.3f} {row['mrr']:>7.3f} {row['n']:>6}")
    return "\n".join(lines)


def retrieval_eval(
    project: Project, dialogues: list[dict[str, Any]] | None = None, report: Path | None = None
) -> dict[str, Any]:
    """Evaluate on the project's eval dialogues (or the given ones); log to MLflow and write a report."""
    import mlflow

    table = retrieval_table(project, dialogues if dialogues is not None else dialogues_of_split(project.data, "eval"))
    with tracked_run(project, "retrieval_eval") as run:
        for mode, row in table.items():
            mlflow.log_metrics({f"retrieval.{mode}.{k.replace('@', '_at_')}": v for k, v in row.items()})
    result = {"table": table, "mlflow_run_id": run.info.run_id}
    write_json(report or project.reports / "retrieval.json", result)
    logger.info("retrieval evaluation:\n%s", render_table(table))
    return result
