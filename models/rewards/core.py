"""The 'format', 'grounding' and 'preference' rewards, batch-wise; every score lies in [0, 1]."""

from __future__ import annotations

import math

import numpy as np

from models.rewards.batch import RewardBatch
from models.rewards.resources import RewardResources
from models.text import ParsedCompletion, word_count

MIN_THINK_WORDS = 3
MIN_REPLY_WORDS = 3
# Cosine similarity of MiniLM embeddings mapped to [0, 1]: clip((cos - LOW) / (HIGH - LOW), 0, 1).
GROUNDING_COS_LOW = 0.1
GROUNDING_COS_HIGH = 0.7


def format_score(parsed: ParsedCompletion) -> float:
    """Graded structure score, so that GRPO has a gradient from the first steps.

    1.0   closed think block, exactly one `</think>`, no further `<think>`, reasoning and reply each >= 3 words
    0.75  as above but the reasoning is shorter than 3 words
    0.5   closed think block with a reply too short or empty
    0.25  unclosed think block with some words
    0.1   stray or duplicate tags: below an unclosed block, or GRPO learns to loop "</think>"
    0.0   nothing at all
    """
    think_words, reply_words = word_count(parsed.think), word_count(parsed.reply)
    if not parsed.closed:
        return 0.25 if think_words > 0 else 0.0
    if think_words == 0 and reply_words == 0:
        return 0.0
    clean = parsed.raw.count("</think>") == 1 and parsed.raw.strip().removeprefix("<think>").count("<think>") == 0
    if not clean:
        return 0.1
    if reply_words >= MIN_REPLY_WORDS:
        return 1.0 if think_words >= MIN_THINK_WORDS else 0.75
    return 0.5


def format_rewards(batch: RewardBatch, resources: RewardResources) -> list[float]:
    return [format_score(p) for p in batch.parsed]


def grounding_rewards(batch: RewardBatch, resources: RewardResources) -> list[float]:
    """How close the reasoning is in meaning to the nearest retrieved passage (MiniLM cosine, rescaled).

    0 when there is no reasoning or no guidance. Passage embeddings are cached by text.
    """
    scores = [0.0] * len(batch)
    todo = [i for i, p in enumerate(batch.parsed) if p.think.strip() and batch.guidance[i]]
    if not todo:
        return scores
    think_vectors = resources.embed([batch.parsed[i].think for i in todo])
    passages = resources.embed_passages([t for i in todo for t in batch.guidance[i]])
    for row, i in enumerate(todo):
        matrix = np.stack([passages[t] for t in batch.guidance[i]])
        cos = float(np.max(matrix @ think_vectors[row]))
        scaled = (cos - GROUNDING_COS_LOW) / (GROUNDING_COS_HIGH - GROUNDING_COS_LOW)
        scores[i] = float(min(1.0, max(0.0, scaled)))
    return scores


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def preference_rewards(batch: RewardBatch, resources: RewardResources) -> list[float]:
    """The reward model's score of the reply alone (never the reasoning) in its context, through a sigmoid.

    An empty reply scores 0 without calling the scorer.
    """
    scorer = resources.require_scorer()
    scores = [0.0] * len(batch)
    todo = [i for i, p in enumerate(batch.parsed) if p.reply.strip()]
    if not todo:
        return scores
    raw = scorer.score([batch.context_text[i] for i in todo], [batch.parsed[i].reply for i in todo])
    if len(raw) != len(todo):
        raise ValueError(f"preference scorer returned {len(raw)} scores for {len(todo)} replies")
    for i, value in zip(todo, raw, strict=True):
        x = (float(value) - resources.preference_offset) / resources.preference_scale
        scores[i] = _sigmoid(x) if math.isfinite(x) else 0.0
    return scores
