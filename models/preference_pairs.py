"""Reply-swap preference pairs from real conversations, and the ranking measures used to judge a reward.

The pair rule (seeded, deterministic for a given seed):
1. A *slot* is every place where a supporter answers a seeker: turn i is a seeker turn and turn i+1 a
   supporter turn (as `contexts_for_training`). Its context is turns[: i+1], its gold reply turns[i+1],
   its relative position (i+1) / len(turns).
2. `max_pairs` slots are drawn with `random.Random(seed)` (all of them when there are fewer).
3. The rejected reply of a slot is a supporter reply drawn uniformly, with the same generator, from the
   slots of *other* conversations whose relative position lies within `window` of the slot's; when no
   other conversation has a slot that close, the nearest one by position. A candidate identical to the
   gold reply (ignoring case and spaces) is skipped.
So both replies are real supporter turns from the same phase of a conversation; only their fit to this
context differs.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.dialogue import contexts_for_training

# Turns kept in a pair's context (the reward model itself reads the last 3).
PAIR_CONTEXT_TURNS = 6


@dataclass(frozen=True)
class Slot:
    """One gold supporter reply in its conversation."""

    conversation_id: str
    index: int
    position: float
    context: list[dict[str, Any]]
    reply: str
    strategy: str


def reply_slots(dialogues: Sequence[dict[str, Any]]) -> list[Slot]:
    """Every (context -> gold supporter reply) of the dialogues, in order."""
    slots = []
    for dialogue in dialogues:
        turns = dialogue["turns"]
        cid = str(dialogue.get("conversation_id") or dialogue["id"])
        for context in contexts_for_training(dialogue):
            gold = turns[len(context)]
            slots.append(
                Slot(cid, len(context), len(context) / len(turns), context, gold["text"], gold.get("strategy", ""))
            )
    return slots


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _candidates(pool: list[Slot], positions: list[float], slot: Slot, window: float) -> list[Slot]:
    lo = bisect.bisect_left(positions, slot.position - window)
    hi = bisect.bisect_right(positions, slot.position + window)
    near = [s for s in pool[lo:hi] if s.conversation_id != slot.conversation_id and _norm(s.reply) != _norm(slot.reply)]
    if near:
        return near
    others = [s for s in pool if s.conversation_id != slot.conversation_id and _norm(s.reply) != _norm(slot.reply)]
    if not others:
        return []
    best = min(abs(s.position - slot.position) for s in others)
    return [s for s in others if abs(s.position - slot.position) == best]


def position_swap_pairs(
    dialogues: Sequence[dict[str, Any]], *, seed: int, max_pairs: int | None = None, window: float = 0.05
) -> list[dict[str, Any]]:
    """Preference records {id, conversation_id, context, chosen, rejected, position} by the rule above."""
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    rng = random.Random(seed)
    slots = reply_slots(dialogues)
    pool = sorted(slots, key=lambda s: (s.position, s.conversation_id, s.index))
    positions = [s.position for s in pool]
    chosen = slots if max_pairs is None or max_pairs >= len(slots) else rng.sample(slots, max_pairs)
    pairs = []
    for slot in chosen:
        candidates = _candidates(pool, positions, slot, window)
        if not candidates:
            continue
        other = rng.choice(candidates)
        pairs.append(
            {
                "id": f"{slot.conversation_id}:{slot.index}",
                "conversation_id": slot.conversation_id,
                "context": slot.context[-PAIR_CONTEXT_TURNS:],
                "chosen": slot.reply,
                "rejected": other.reply,
                "position": slot.position,
                "rejected_from": f"{other.conversation_id}:{other.index}",
            }
        )
    return pairs


def win_rate(chosen: Sequence[float], rejected: Sequence[float]) -> float:
    """Share of pairs where the chosen side scores higher; a tie counts one half."""
    if len(chosen) != len(rejected) or not chosen:
        raise ValueError(f"need equal, non-empty score lists (got {len(chosen)} and {len(rejected)})")
    return sum(1.0 if c > r else 0.5 if c == r else 0.0 for c, r in zip(chosen, rejected, strict=True)) / len(chosen)


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """ROC AUC: the probability that a positive scores above a negative (ties count one half)."""
    if not positive or not negative:
        raise ValueError("AUC needs at least one positive and one negative score")
    ordered = sorted([(v, 1) for v in positive] + [(v, 0) for v in negative])
    rank_sum, i = 0.0, 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        mid_rank = (i + 1 + j) / 2  # 1-based average rank of the tied block
        rank_sum += mid_rank * sum(label for _, label in ordered[i:j])
        i = j
    n_pos, n_neg = len(positive), len(negative)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
