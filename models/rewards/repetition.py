"""The 'repetition' reward: penalises loops inside the reply and parroting the seeker."""

from __future__ import annotations

from models.rewards.batch import RewardBatch
from models.rewards.resources import RewardResources
from models.text import words

LOOP_N = 3  # n-gram size for loop detection
COPY_N = 3  # n-gram size for copy detection
# distinct/total n-gram ratio: >= LOOP_OK scores 1, <= LOOP_BAD scores 0, linear between.
LOOP_OK, LOOP_BAD = 0.9, 0.5
# Share of the reply's n-grams found in the seeker text: <= COPY_OK scores 1, >= COPY_BAD scores 0.
COPY_OK, COPY_BAD = 0.3, 0.7
# Longest run of words shared with the seeker text: <= RUN_OK scores 1, >= RUN_BAD scores 0.
RUN_OK, RUN_BAD = 6, 14


def _ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def _ramp_down(value: float, ok: float, bad: float) -> float:
    """1 at or below `ok`, 0 at or beyond `bad`, linear between (works for either direction)."""
    t = (value - ok) / (bad - ok)
    return float(min(1.0, max(0.0, 1.0 - t)))


def loop_score(tokens: list[str]) -> float:
    """1.0 when the reply's n-grams are (nearly) all distinct, falling to 0 for a looping reply."""
    grams = _ngrams(tokens, LOOP_N)
    if len(grams) < 2:
        return 1.0
    return _ramp_down(len(set(grams)) / len(grams), LOOP_OK, LOOP_BAD)


def longest_shared_run(a: list[str], b: list[str]) -> int:
    """Length of the longest run of consecutive words that `a` and `b` share."""
    best, prev = 0, [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def copy_score(reply_tokens: list[str], source_tokens: list[str]) -> float:
    """1.0 for a reply in its own words, falling to 0 for one that parrots `source_tokens`."""
    if not reply_tokens or not source_tokens:
        return 1.0
    source = set(_ngrams(source_tokens, COPY_N))
    grams = _ngrams(reply_tokens, COPY_N)
    overlap = sum(g in source for g in grams) / len(grams) if grams else 0.0
    run = longest_shared_run(reply_tokens[:200], source_tokens[-400:])
    # A short reply that is entirely a copy still counts as a copy.
    if len(reply_tokens) < COPY_N + 1 and run == len(reply_tokens):
        overlap = 1.0
    return min(_ramp_down(overlap, COPY_OK, COPY_BAD), _ramp_down(run, RUN_OK, RUN_BAD))


def repetition_score(reply: str, seeker_text: str) -> float:
    """min(loop score, copy score); 0 for an empty reply, 1.0 for a fresh, non-repetitive one."""
    tokens = words(reply)
    if not tokens:
        return 0.0
    return min(loop_score(tokens), copy_score(tokens, words(seeker_text)))


def repetition_rewards(batch: RewardBatch, resources: RewardResources) -> list[float]:
    return [repetition_score(p.reply, s) for p, s in zip(batch.parsed, batch.seeker_text, strict=True)]
