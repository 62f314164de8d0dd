"""How well retrieval finds guidance of the strategy the gold supporter actually used next.

For every supporter turn with a gold strategy, the query is built from the dialogue before it (the
documented rule in `models.dialogue.retrieval_query`). strategy-hit@k is the share of turns where one
of the top-k passages carries the gold strategy; MRR uses the rank of the first such passage.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from models.dialogue import retrieval_query
from models.retriever import cap_per_strategy

Search = Callable[[str, int], list[dict[str, Any]]]


@dataclass(frozen=True)
class Probe:
    query: str
    gold_strategy: str


def probes(dialogues: Iterable[dict[str, Any]]) -> list[Probe]:
    """One probe per supporter turn with a gold strategy that follows at least one seeker turn."""
    out = []
    for dialogue in dialogues:
        turns = dialogue["turns"]
        for i, turn in enumerate(turns):
            before = turns[:i]
            if (
                turn["speaker"] == "supporter"
                and turn.get("strategy")
                and any(t["speaker"] == "seeker" for t in before)
            ):
                out.append(Probe(retrieval_query(dialogue.get("situation", ""), before), turn["strategy"]))
    return out


def score_rankings(rankings: Sequence[Sequence[str]], golds: Sequence[str], k: int = 5) -> dict[str, float]:
    """strategy-hit@1, strategy-hit@k and MRR (over the ranked list) for ranked strategy lists."""
    n = len(golds)
    if n == 0:
        return {"hit@1": 0.0, f"hit@{k}": 0.0, "mrr": 0.0, "n": 0}
    hit1 = sum(1 for r, g in zip(rankings, golds, strict=True) if list(r[:1]) == [g])
    hitk = sum(1 for r, g in zip(rankings, golds, strict=True) if g in r[:k])
    mrr = sum(1.0 / (list(r).index(g) + 1) if g in r else 0.0 for r, g in zip(rankings, golds, strict=True))
    return {"hit@1": hit1 / n, f"hit@{k}": hitk / n, "mrr": mrr / n, "n": n}


def evaluate_search(search: Search, items: Sequence[Probe], k: int = 5, depth: int = 10) -> dict[str, float]:
    rankings = [[p["strategy"] for p in search(item.query, depth)] for item in items]
    return score_rankings(rankings, [item.gold_strategy for item in items], k)


def random_baseline(
    passage_strategies: Sequence[str],
    items: Sequence[Probe],
    k: int = 5,
    depth: int = 10,
    seed: int = 0,
    max_per_strategy: int = 0,
) -> dict[str, float]:
    """Passages drawn uniformly at random from the corpus, the same number per probe.

    With `max_per_strategy`, the random order is capped like search results are, so the row isolates
    what the ranking adds beyond the cap's spread over strategies.
    """
    rng = random.Random(seed)
    rankings = []
    for _ in items:
        order = rng.sample(list(passage_strategies), len(passage_strategies))
        if max_per_strategy:
            order = [o["strategy"] for o in cap_per_strategy([{"strategy": s} for s in order], max_per_strategy)]
        rankings.append(order[:depth])
    return score_rankings(rankings, [item.gold_strategy for item in items], k)


def compare_modes(
    searches: dict[str, Search],
    passage_strategies: Sequence[str],
    items: Sequence[Probe],
    k: int = 5,
    seed: int = 0,
    max_per_strategy: int = 0,
) -> dict[str, dict[str, float]]:
    """One row per retrieval mode, random passages, and (with a cap) random passages under the same cap."""
    table = {mode: evaluate_search(search, items, k) for mode, search in searches.items()}
    table["random"] = random_baseline(passage_strategies, items, k, seed=seed)
    if max_per_strategy:
        table["random_capped"] = random_baseline(
            passage_strategies, items, k, seed=seed, max_per_strategy=max_per_strategy
        )
    return table
