"""Evaluate the candidate policy against the base model on held-out dialogues; report and plots."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from statistics import fmean
from typing import Any

from models.records import dialogues_of_split
from tasks.project import Project
from tasks.tracking import log_jsonl_dataset, tracked_run
from tasks.train_stages import build_split_examples, dataset_digest, write_json

logger = logging.getLogger(__name__)


def make_scorer(project: Project) -> Callable[[str, dict[str, Any]], dict[str, float]]:
    """Score a completion on every reward named in params (weights as in training)."""
    from models.rewards import RewardResources, score_all
    from models.text import split_completion
    from tasks.reward_registry import preference_scorer

    resources = RewardResources(preference_scorer=preference_scorer(project), compute=project.compute)
    weights = project.params.grpo.rewards

    def score(completion: str, example: dict[str, Any]) -> dict[str, float]:
        scores = score_all(
            completion,
            guidance=example["guidance"],
            guidance_strategies=example["guidance_strategies"],
            stage=example["stage"],
            seeker_text=example["seeker_text"],
            context_text=example["context_text"],
            weights=weights,
            resources=resources,
        )
        scores["reply_words"] = float(len(split_completion(completion)[1].split()))
        return scores

    return score


def evaluate_models(project: Project, models: dict[str, Path]) -> tuple[dict[str, dict], dict[str, list]]:
    """Summaries and per-example rows for each named policy folder, on the same eval contexts."""
    from models.evaluation import evaluate_policy

    settings = project.params.evaluate
    examples = build_split_examples(project, "eval", settings.max_dialogues)
    score = make_scorer(project)
    summaries, details = {}, {}
    for name, model_dir in models.items():
        summaries[name], details[name] = evaluate_policy(
            model_dir, examples, score, settings.max_new_tokens, project.compute, project.params.seed
        )
    return summaries, details


def reward_trend(curve: list[dict[str, float]], window: int = 5) -> dict[str, float]:
    """Mean training reward over the first and the last `window` GRPO steps, and the rise between them."""
    rewards = [row["reward"] for row in curve]
    if not rewards:
        return {}
    first, last = fmean(rewards[:window]), fmean(rewards[-window:])
    return {"training_reward_first": first, "training_reward_last": last, "training_reward_rise": last - first}


def evaluate(project: Project) -> dict:
    import mlflow

    from models.plots import plot_comparison, plot_reward_curve

    out = project.artifact("evaluate")
    out.mkdir(parents=True, exist_ok=True)
    summaries, details = evaluate_models(
        project, {"candidate": project.artifact("policy"), "base": project.artifact("base_model")}
    )
    for name, rows in details.items():
        (out / f"{name}_completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    curve = json.loads((project.reports / "grpo_reward_curve.json").read_text())["reward"]
    plots = [plot_reward_curve(curve, out / "reward_curve.png"), plot_comparison(summaries, out / "comparison.png")]
    run_id = json.loads(project.artifact("grpo", "run.json").read_text())["mlflow_run_id"]
    report = {
        "mlflow_run_id": run_id,
        "candidate": summaries["candidate"],
        "base": summaries["base"],
        "delta_vs_base": {k: summaries["candidate"][k] - summaries["base"][k] for k in summaries["candidate"]},
        **reward_trend(curve),
    }
    write_json(project.reports / "evaluate.json", report)
    with tracked_run(project, "grpo", run_id=run_id):
        log_jsonl_dataset(
            project.data / "dialogues",
            dialogues_of_split(project.data, "eval"),
            "dialogues-eval",
            dataset_digest(project, "dialogues"),
            "evaluation",
        )
        for model, summary in summaries.items():
            mlflow.log_metrics({f"eval.{model}.{k}": v for k, v in summary.items()})
        for path in plots:
            mlflow.log_artifact(str(path), artifact_path="evaluation")
        mlflow.log_artifact(str(project.reports / "evaluate.json"), artifact_path="evaluation")
    return report
