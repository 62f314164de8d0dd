"""Pairwise comparison of two models judged on the same turns: wins, ties inside a noise band, a bootstrap
95% interval over conversations, and a two-sided sign test.

A turn is a win for A when composite(A) − composite(B) > band, a loss when < −band, else a tie. The
win-rate counts a tie as half a win, so 0.5 means "no difference". The interval resamples whole
conversations (turns of one conversation are not independent). The sign test ignores ties.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass


def composite(metrics: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Weighted mean of the per-reply metrics that are present (each in [0, 1], higher is better)."""
    present = {k: w for k, w in weights.items() if k in metrics}
    if not present:
        raise ValueError(f"none of the composite's metrics {sorted(weights)} were measured")
    return sum(w * metrics[k] for k, w in present.items()) / sum(present.values())


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial p-value of wins vs losses under p = 0.5."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class WinRate:
    wins: int
    ties: int
    losses: int
    win_rate: float
    ci_low: float
    ci_high: float
    sign_test_p: float
    band: float

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    def summary(self) -> str:
        return (
            f"win-rate {self.win_rate:.3f} [95% CI {self.ci_low:.3f}, {self.ci_high:.3f}] "
            f"({self.wins} wins, {self.ties} ties, {self.losses} losses; sign test p={self.sign_test_p:.3g})"
        )


def _outcomes(a: Sequence[float], b: Sequence[float], band: float) -> list[float]:
    return [1.0 if x - y > band else 0.0 if x - y < -band else 0.5 for x, y in zip(a, b, strict=True)]


def win_rate(
    a: Sequence[float], b: Sequence[float], groups: Sequence[str], *, band: float, n_boot: int, seed: int
) -> WinRate:
    """A against B on the same turns; `groups` names each turn's conversation for the bootstrap."""
    if not a or len(a) != len(b) or len(a) != len(groups):
        raise ValueError(f"need equal, non-empty score lists and groups; got {len(a)}, {len(b)}, {len(groups)}")
    return rate_outcomes(_outcomes(a, b, band), groups, band=band, n_boot=n_boot, seed=seed)


def rate_outcomes(outcomes: Sequence[float], groups: Sequence[str], *, band: float, n_boot: int, seed: int) -> WinRate:
    """The win-rate of per-turn outcomes in [0, 1] (1 win, 0.5 tie, 0 loss; between: a partial win)."""
    if not outcomes or len(outcomes) != len(groups):
        raise ValueError(f"need equal, non-empty outcomes and groups; got {len(outcomes)}, {len(groups)}")
    by_group: dict[str, list[float]] = {}
    for group, outcome in zip(groups, outcomes, strict=True):
        by_group.setdefault(group, []).append(outcome)
    clusters = list(by_group.values())
    rng = random.Random(seed)
    rates = []
    for _ in range(n_boot):
        drawn = [o for _ in clusters for o in rng.choice(clusters)]
        rates.append(sum(drawn) / len(drawn))
    rates.sort()
    wins, losses = sum(o > 0.5 for o in outcomes), sum(o < 0.5 for o in outcomes)
    return WinRate(
        wins=wins,
        ties=len(outcomes) - wins - losses,
        losses=losses,
        win_rate=sum(outcomes) / len(outcomes),
        ci_low=rates[int(0.025 * (n_boot - 1))],
        ci_high=rates[int(0.975 * (n_boot - 1))],
        sign_test_p=sign_test(wins, losses),
        band=band,
    )
