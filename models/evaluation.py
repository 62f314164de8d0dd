"""Offline evaluation of a policy on held-out dialogue contexts: greedy replies, every reward, summaries."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

from models.compute import Compute

logger = logging.getLogger(__name__)

EVAL_TEMPERATURE = 0.7
EVAL_TOP_P = 0.9

ScoreFn = Callable[[str, dict[str, Any]], dict[str, float]]


def generate_completions(
    model_dir: Path | str, prompts: Sequence[str], max_new_tokens: int, compute: Compute, seed: int
) -> list[str]:
    """Seeded sampled completions (the text after the prompt), batched with left padding, placed by `compute`."""
    import torch
    from tqdm.auto import tqdm

    from models.base_model import load_policy

    model, tokenizer = load_policy(model_dir, compute)
    model.eval()
    torch.manual_seed(seed)
    batch_size = compute.generate_batch_size
    completions: list[str] = []
    for start in tqdm(range(0, len(prompts), batch_size), desc=f"generate {Path(str(model_dir)).name}"):
        batch = list(prompts[start : start + batch_size])
        enc = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(compute.device)
        with torch.no_grad():
            out = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                # Greedy decoding of a 135M model loops ("</think>" again and again); seeded sampling at
                # a moderate temperature is what the policy was trained with, and is repeatable.
                do_sample=True,
                temperature=EVAL_TEMPERATURE,
                top_p=EVAL_TOP_P,
                pad_token_id=tokenizer.pad_token_id,
            )
        new_tokens = out[:, enc["input_ids"].shape[1] :]
        completions.extend(tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
    return completions


def summarize(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Mean of each reward (`reward_<name>`), format compliance and mean reply length."""
    names = [k for k in rows[0] if k not in ("reply_words",)]
    summary = {f"reward_{name}": fmean(r[name] for r in rows) for name in names}
    summary["format_compliance"] = fmean(1.0 if r["format"] >= 1.0 else 0.0 for r in rows)
    summary["reply_words"] = fmean(r["reply_words"] for r in rows)
    return summary


def evaluate_policy(
    model_dir: Path | str,
    examples: Sequence[dict[str, Any]],
    score: ScoreFn,
    max_new_tokens: int,
    compute: Compute,
    seed: int,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Generate for every example, score each completion; returns (summary, per-example rows)."""
    prompts = [e["prompt"] for e in examples]
    completions = generate_completions(model_dir, prompts, max_new_tokens, compute, seed)
    rows = [{**score(c, e)} for c, e in zip(completions, examples, strict=True)]
    details = [
        {"dialogue_id": e["dialogue_id"], "completion": c, **r}
        for c, e, r in zip(completions, examples, rows, strict=True)
    ]
    return summarize(rows), details
