"""Which held-out supporter turns an evaluation judges: a seeded sample, stratified by stage of helping.

Every model of one evaluation is judged on exactly these contexts. The sample is proportional per stage
(largest remainder), so each stage keeps its share of the eval split, and every stage with turns gets
at least one. Order inside a stage is a hash of (seed, dialogue, turn), so adding a dialogue does not
reshuffle the others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from models.dialogue import Turn, contexts_for_training, infer_stage

EvalTurn = tuple[dict[str, Any], list[Turn]]  # (dialogue, the context before the gold supporter reply)


def turn_stage(dialogue: dict[str, Any], context: Sequence[Turn]) -> str:
    gold = dialogue["turns"][len(context)]
    return infer_stage(len(context) / len(dialogue["turns"]), gold.get("strategy"))


def _key(seed: int, dialogue: dict[str, Any], context: Sequence[Turn]) -> str:
    return hashlib.sha256(f"{seed}:{dialogue['id']}:{len(context)}".encode()).hexdigest()


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """How many of n to take from each stratum: proportional, largest remainder, at least 1 where any."""
    total = sum(sizes.values())
    if total <= n:
        return dict(sizes)
    exact = {k: n * v / total for k, v in sizes.items()}
    taken = {k: max(1, int(x)) if sizes[k] else 0 for k, x in exact.items()}
    by_remainder = sorted(sizes, key=lambda k: exact[k] - int(exact[k]), reverse=True)
    for k in by_remainder:
        if sum(taken.values()) >= n:
            break
        if taken[k] < sizes[k]:
            taken[k] += 1
    return taken


def sample_eval_turns(dialogues: Sequence[dict[str, Any]], n: int, seed: int) -> list[EvalTurn]:
    """Up to n (dialogue, context) pairs, stratified by stage; all of them when there are fewer."""
    strata: dict[str, list[EvalTurn]] = {}
    for dialogue in dialogues:
        for context in contexts_for_training(dialogue):
            strata.setdefault(turn_stage(dialogue, context), []).append((dialogue, context))
    for items in strata.values():
        items.sort(key=lambda item: _key(seed, *item))
    counts = allocate({stage: len(items) for stage, items in strata.items()}, n)
    return [item for stage in sorted(strata) for item in strata[stage][: counts[stage]]]
