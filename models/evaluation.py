"""Offline evaluation of policies on held-out supporter turns, judged by the independent evaluators.

Every model is judged on the same sampled contexts (models.eval_sampling) with the same seeded decoding,
and only on its reply (models.judging). An escrag policy is prompted with guidance and an open `<think>`
block; a model without that form (the base model) in its own chat format, so that it does reply.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.comparison import WinRate, composite, win_rate
from models.compute import Compute
from models.eval_sampling import sample_eval_turns
from models.evaluators import Evaluators
from models.judging import judge_replies, reply_of, summarize_replies
from models.prompts import PROMPT_STYLES, build_chat_prompt, build_prompt
from models.training_data import example_for

logger = logging.getLogger(__name__)

# Extra per-turn scores (the training rewards, when a gate names one): completion, example -> name -> score.
ExtraScore = Callable[[str, dict[str, Any]], dict[str, float]]


@dataclass(frozen=True)
class EvalModel:
    """A model to evaluate: its name in reports, its folder, and how it is prompted (`PROMPT_STYLES`)."""

    name: str
    path: Path
    style: str = "think"

    def __post_init__(self) -> None:
        if self.style not in PROMPT_STYLES:
            raise ValueError(f"prompt style {self.style!r} is not one of {PROMPT_STYLES}")


@dataclass(frozen=True)
class Decoding:
    """The one decoding every model of an evaluation shares."""

    max_new_tokens: int
    compute: Compute
    seed: int
    temperature: float  # params.yaml evaluate.temperature / top_p
    top_p: float


def generate_completions(model_dir: Path | str, prompts: Sequence[str], decoding: Decoding) -> list[str]:
    """Seeded sampled completions (the text after the prompt), batched with left padding, placed by `compute`."""
    import torch
    from tqdm.auto import tqdm

    from models.generation import PolicyGenerator, Sampling

    compute = decoding.compute
    generator = PolicyGenerator(model_dir, compute, Sampling(decoding.temperature, decoding.top_p))
    torch.manual_seed(decoding.seed)
    batch_size = compute.generate_batch_size
    completions: list[str] = []
    for start in tqdm(range(0, len(prompts), batch_size), desc=f"generate {Path(str(model_dir)).name}"):
        completions.extend(generator.complete(prompts[start : start + batch_size], decoding.max_new_tokens))
    return completions


def eval_examples(
    dialogues: Sequence[dict[str, Any]], search, tokenizer, *, k: int, n_turns: int, seed: int
) -> list[dict[str, Any]]:
    """The sampled turns (stratified by stage, seeded), each with its guidance, gold reply and stage."""
    return [example_for(d, context, search, tokenizer, k) for d, context in sample_eval_turns(dialogues, n_turns, seed)]


def prompts_for(model: EvalModel, examples: Sequence[dict[str, Any]]) -> list[str]:
    """Each example's prompt in the model's own chat template and prompt style."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model.path))
    if model.style == "think":
        return [build_prompt(tokenizer, e["shown_turns"], e["passages"]) for e in examples]
    return [build_chat_prompt(tokenizer, e["shown_turns"]) for e in examples]


def judge_model(
    model: EvalModel,
    examples: Sequence[dict[str, Any]],
    evaluators: Evaluators,
    decoding: Decoding,
    extra: ExtraScore | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Generate for every example and judge each reply; returns (summary, per-turn rows)."""
    completions = generate_completions(model.path, prompts_for(model, examples), decoding)
    replies = [reply_of(c, model.style) for c in completions]
    rows = judge_replies(
        replies, [e["seeker_text"] for e in examples], [e["gold_strategy"] for e in examples], evaluators
    )
    if extra is not None:
        for row, completion, example in zip(rows, completions, examples, strict=True):
            row.update({f"reward_{k}": v for k, v in extra(completion, example).items()})
    summary = summarize_replies(
        rows,
        replies,
        [e["gold_reply"] for e in examples],
        completions if model.style == "think" else None,
    )
    details = [
        {"dialogue_id": e["dialogue_id"], "stage": e["stage"], "completion": c, "reply": r, **row}
        for e, c, r, row in zip(examples, completions, replies, rows, strict=True)
    ]
    return summary, details


def compare(
    rows_a: Sequence[Mapping[str, Any]],
    rows_b: Sequence[Mapping[str, Any]],
    weights: Mapping[str, float],
    *,
    band: float,
    n_boot: int,
    seed: int,
) -> WinRate:
    """A's win-rate over B on the same turns, by the composite of the independent per-reply metrics."""
    a = [composite(r, weights) for r in rows_a]
    b = [composite(r, weights) for r in rows_b]
    return win_rate(a, b, [r["dialogue_id"] for r in rows_a], band=band, n_boot=n_boot, seed=seed)


def stage_counts(examples: Sequence[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(e["stage"] for e in examples).items()))
