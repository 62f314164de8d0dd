"""Judging replies with the independent evaluators, and summarising a model's judged replies.

Only the reply is judged, never the `<think>` text. An empty reply (a think-style model that never
closed its reasoning block) gets the worst score on every evaluator: it said nothing to the seeker.
The per-reply metrics are each in [0, 1] with higher better, so a composite of them (models.comparison)
means the same for every model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from models.esconv_metrics import esconv_metrics
from models.evaluators import EMPATHY, RISK_IGNORANCE, STRATEGY, Evaluators
from models.schema import RISK_ATTENDED, STRATEGY_MATCH
from models.text import parse_completion


def reply_of(completion: str, style: str) -> str:
    """What the seeker would read: after `</think>` for a think-style model (empty if never closed),
    else the whole completion."""
    if style == "think":
        return parse_completion(completion).reply
    return completion.strip()


def judge_replies(
    replies: Sequence[str], seeker_texts: Sequence[str], gold_strategies: Sequence[str], evaluators: Evaluators
) -> list[dict[str, Any]]:
    """Per reply: the independent metrics that are present, the predicted strategy and the word count."""
    scores = evaluators.score(list(seeker_texts), list(replies))
    rows = []
    for i, reply in enumerate(replies):
        row: dict[str, Any] = {"reply_words": float(len(reply.split())), "empty_reply": float(not reply.strip())}
        if STRATEGY in scores:
            row["strategy"] = scores[STRATEGY][i] if reply.strip() else "none"
            row[STRATEGY_MATCH] = float(row["strategy"] == gold_strategies[i])
        for name in EMPATHY:
            if name in scores:
                row[name] = scores[name][i] if reply.strip() else 0.0
        if RISK_IGNORANCE in scores:
            row[RISK_ATTENDED] = 1.0 - scores[RISK_IGNORANCE][i] if reply.strip() else 0.0
        rows.append(row)
    return rows


def summarize_replies(
    rows: Sequence[dict[str, Any]],
    replies: Sequence[str],
    references: Sequence[str],
    completions: Sequence[str] | None,
) -> dict[str, Any]:
    """Means of the per-reply metrics, ESConv's automatic metrics, the strategy mix, and the format
    compliance of `completions` (None for a model prompted without the `<think>` form)."""
    numeric = sorted({k for row in rows for k, v in row.items() if isinstance(v, float)})
    summary: dict[str, Any] = {k: fmean(row[k] for row in rows if k in row) for k in numeric}
    summary |= esconv_metrics(references, replies)
    if completions is not None:
        summary["format_compliance"] = fmean(float(parse_completion(c).well_formed) for c in completions)
    strategies = Counter(row["strategy"] for row in rows if "strategy" in row)
    if strategies:
        summary["strategy_distribution"] = {k: v / len(rows) for k, v in sorted(strategies.items())}
    return summary
