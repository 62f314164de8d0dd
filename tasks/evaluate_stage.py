"""Evaluate the candidate policy against the base model on held-out turns, and run the crisis suite.

The independent evaluators judge every reply; the candidate's win-rate over base uses their composite
(`promote.composite`). The crisis suite's replies are checked by the safety assessment and the
risk-ignorance evaluator. The champion is judged at promotion time, on the same turns (tasks/promotion.py).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from statistics import fmean
from typing import Any

from models.evaluation import Decoding, EvalModel, ExtraScore
from models.evaluators import Evaluators
from models.promotion_gate import CrisisCase
from models.records import dialogues_of_split
from tasks.project import Project
from tasks.tracking import log_jsonl_dataset, tracked_run
from tasks.train_stages import dataset_digest, write_json

logger = logging.getLogger(__name__)

CRISIS_SUITE = Path("evals", "crisis_gate", "contexts.jsonl")  # relative to the project root
TURNS_FILE = "{model}_turns.jsonl"  # per-turn rows of each model, under artifacts/evaluate


def decoding(project: Project) -> Decoding:
    settings = project.params.evaluate
    return Decoding(settings.max_new_tokens, project.compute, project.params.seed, settings.temperature, settings.top_p)


def load_evaluators(project: Project) -> Evaluators:
    folder = project.artifact("evaluators")
    if not (folder / "evaluators.pkl").exists():
        raise FileNotFoundError(f"{folder}: no evaluators yet; run `escrag stage evaluators` first")
    return Evaluators.load(folder)


def eval_examples(
    project: Project, dialogues: list[dict[str, Any]] | None = None, n_turns: int | None = None
) -> list[dict[str, Any]]:
    """The sampled held-out turns (`evaluate.turns`, seeded): the eval split unless `dialogues` are given."""
    from transformers import AutoTokenizer

    from models import evaluation
    from tasks.guidance import open_retriever

    params = project.params
    retriever = open_retriever(project)
    return evaluation.eval_examples(
        dialogues if dialogues is not None else dialogues_of_split(project.data, "eval"),
        lambda query, k: retriever.search(query, k=k),
        AutoTokenizer.from_pretrained(str(project.artifact("base_model"))),
        k=params.retrieval.k,
        n_turns=n_turns or params.evaluate.turns,
        seed=params.seed,
    )


def reward_scorer(project: Project) -> ExtraScore | None:
    """The training rewards per turn, only when `promote.metrics` names one (they never decide alone)."""
    if not any(name.startswith("reward_") for name in project.params.promote.metrics):
        return None
    from models.rewards import RewardResources, score_all
    from tasks.reward_registry import preference_scorer

    resources = RewardResources(preference_scorer=preference_scorer(project), compute=project.compute)
    weights = project.params.grpo.rewards

    def score(completion: str, example: dict[str, Any]) -> dict[str, float]:
        return score_all(
            completion,
            guidance=[p["text"] for p in example["passages"]],
            guidance_strategies=[p["strategy"] for p in example["passages"]],
            stage=example["stage"],
            seeker_text=example["seeker_text"],
            context_text=example["context_text"],
            weights=weights,
            resources=resources,
        )

    return score


def judge(
    project: Project, model: EvalModel, examples: list[dict[str, Any]], evaluators: Evaluators
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from models.evaluation import judge_model

    extra = reward_scorer(project) if model.style == "think" else None
    return judge_model(model, examples, evaluators, decoding(project), extra)


def crisis_check(project: Project, model: EvalModel, evaluators: Evaluators) -> list[CrisisCase]:
    """The model's reply to every context of the crisis suite, judged for safety."""
    from models.crisis_suite import judge_suite, load_suite
    from models.dialogue import retrieval_query
    from models.evaluation import generate_completions, prompts_for
    from models.judging import reply_of
    from models.rewards import RewardResources
    from tasks.guidance import open_retriever

    contexts = load_suite(project.root / CRISIS_SUITE)
    retriever = open_retriever(project)
    k = project.params.retrieval.k
    examples = [
        {"shown_turns": c.turns, "passages": retriever.search(retrieval_query("", c.turns), k=k)} for c in contexts
    ]
    completions = generate_completions(model.path, prompts_for(model, examples), decoding(project))
    replies = [reply_of(c, model.style) for c in completions]
    assessor = RewardResources(compute=project.compute).safety_assessor
    threshold = project.params.promote.crisis_risk_ignorance
    return judge_suite(contexts, replies, assessor, evaluators, threshold)


def compare_rows(project: Project, rows_a: list[dict], rows_b: list[dict]) -> dict[str, float]:
    from models.evaluation import compare

    settings = project.params.promote
    result = compare(
        rows_a,
        rows_b,
        settings.composite,
        band=settings.tie_band,
        n_boot=settings.bootstrap,
        seed=project.params.seed,
    )
    return result.as_dict()


def llm_judge(
    project: Project, examples: list[dict[str, Any]], rows_a: list[dict], rows_b: list[dict]
) -> dict[str, Any]:
    """A's win-rate over B by the optional LLM judge (both orders), when ESCRAG_JUDGE_URL/_MODEL are set."""
    from models.backends import JUDGE_PREFIX, http_backend_from_env, http_configured

    if not http_configured(prefix=JUDGE_PREFIX):
        return {"configured": False, "why": f"no judge endpoint: set {JUDGE_PREFIX}_URL and {JUDGE_PREFIX}_MODEL"}
    from models.comparison import rate_outcomes
    from models.pairwise_judge import PAIRWISE_RUBRIC_VERSION, judge_pairs

    backend = http_backend_from_env(prefix=JUDGE_PREFIX)
    judged = judge_pairs(backend, examples, [r["reply"] for r in rows_a], [r["reply"] for r in rows_b])
    rate = rate_outcomes(
        [j.outcome for j in judged],
        [r["dialogue_id"] for r in rows_a],
        band=0.0,
        n_boot=project.params.promote.bootstrap,
        seed=project.params.seed,
    )
    unparsed = sum(v is None for j in judged for v in j.verdicts)
    return {"configured": True, "judge": backend.label, "rubric": PAIRWISE_RUBRIC_VERSION, "unparsed": unparsed,
            **rate.as_dict()}  # fmt: skip


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def reward_trend(curve: list[dict[str, float]], window: int = 5) -> dict[str, float]:
    """Mean training reward over the first and the last `window` GRPO steps, and the rise between them."""
    rewards = [row["reward"] for row in curve]
    if not rewards:
        return {}
    first, last = fmean(rewards[:window]), fmean(rewards[-window:])
    return {"training_reward_first": first, "training_reward_last": last, "training_reward_rise": last - first}


def _sample_report(project: Project, examples: list[dict[str, Any]]) -> dict[str, Any]:
    from models.evaluation import stage_counts

    return {
        "turns": len(examples),
        "dialogues": len({e["dialogue_id"] for e in examples}),
        "by_stage": stage_counts(examples),
        "seed": project.params.seed,
        "max_new_tokens": project.params.evaluate.max_new_tokens,
    }


def evaluate(project: Project) -> dict:
    """The DVC stage: candidate (think) and base (chat) on the same turns, win-rate, crisis suite."""
    from models.promotion_gate import crisis_line

    out = project.artifact("evaluate")
    out.mkdir(parents=True, exist_ok=True)
    evaluators = load_evaluators(project)
    examples = eval_examples(project)
    candidate = EvalModel("candidate", project.artifact("policy"), "think")
    base = EvalModel("base", project.artifact("base_model"), "chat")
    summaries, rows = {}, {}
    for model in (candidate, base):
        summaries[model.name], rows[model.name] = judge(project, model, examples, evaluators)
        write_rows(out / TURNS_FILE.format(model=model.name), rows[model.name])
    crisis = crisis_check(project, candidate, evaluators)
    write_rows(out / "crisis_suite.jsonl", [c.as_dict() for c in crisis])
    crisis_ok, crisis_summary = crisis_line(crisis)
    curve = json.loads((project.reports / "grpo_reward_curve.json").read_text())["reward"]
    report = {
        "mlflow_run_id": json.loads(project.artifact("grpo", "run.json").read_text())["mlflow_run_id"],
        "sample": _sample_report(project, examples),
        "models": summaries,
        "win_rates": {"base": compare_rows(project, rows["candidate"], rows["base"])},
        "llm_judge": {"base": llm_judge(project, examples, rows["candidate"], rows["base"])},
        "crisis": {"passed": crisis_ok, "summary": crisis_summary, "cases": len(crisis)},
        "evaluators": {"heldout": evaluators.heldout, "missing": evaluators.missing},
        **reward_trend(curve),
    }
    write_json(project.reports / "evaluate.json", report)
    _log(project, report, _plots(out, summaries, curve))
    return report


def _plots(out: Path, summaries: dict[str, dict[str, Any]], curve: list[dict[str, float]]) -> list[Path]:
    from models.plots import plot_comparison, plot_reward_curve

    return [plot_reward_curve(curve, out / "reward_curve.png"), plot_comparison(summaries, out / "comparison.png")]


def eval_metrics(report: dict[str, Any]) -> dict[str, float]:
    """The evaluation's metrics as the registered run logs them (`eval.MODEL.METRIC`, `eval.win_rate_vs_base.*`)."""
    metrics = {
        f"eval.{model}.{k}": float(v)
        for model, summary in report["models"].items()
        for k, v in summary.items()
        if isinstance(v, float)
    }
    return metrics | {f"eval.win_rate_vs_base.{k}": float(v) for k, v in report["win_rates"]["base"].items()}


def _log(project: Project, report: dict[str, Any], plots: list[Path]) -> None:
    import mlflow

    with tracked_run(project, "grpo", run_id=report["mlflow_run_id"]):
        log_jsonl_dataset(
            project.data / "dialogues",
            dialogues_of_split(project.data, "eval"),
            "dialogues-eval",
            dataset_digest(project, "dialogues"),
            "evaluation",
        )
        mlflow.log_metrics(eval_metrics(report))
        mlflow.set_tag("eval.crisis_suite", report["crisis"]["summary"][:5000])
        for path in plots:
            mlflow.log_artifact(str(path), artifact_path="evaluation")
        mlflow.log_artifact(str(project.reports / "evaluate.json"), artifact_path="evaluation")
        for rows in sorted(project.artifact("evaluate").glob("*.jsonl")):
            mlflow.log_artifact(str(rows), artifact_path="evaluation/turns")
