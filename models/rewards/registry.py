"""Reward functions by name: the TRL-facing wrappers, the weights check, and whole-completion scoring."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from models.rewards.batch import RewardBatch, make_batch
from models.rewards.core import format_rewards, grounding_rewards, preference_rewards
from models.rewards.repetition import repetition_rewards
from models.rewards.resources import RewardResources
from models.rewards.safety import safety_rewards
from models.rewards.strategy import strategy_fit_rewards
from models.schema import REWARD_NAMES

BatchReward = Callable[[RewardBatch, RewardResources], list[float]]
RewardFunction = Callable[..., list[float]]

_REGISTRY: dict[str, BatchReward] = {
    "format": format_rewards,
    "grounding": grounding_rewards,
    "strategy_fit": strategy_fit_rewards,
    "preference": preference_rewards,
    "safety": safety_rewards,
    "repetition": repetition_rewards,
}
if tuple(_REGISTRY) != REWARD_NAMES:  # one list of names (models.schema), one function each
    raise RuntimeError(f"reward registry {tuple(_REGISTRY)} differs from models.schema.REWARD_NAMES {REWARD_NAMES}")


class UnknownRewardError(ValueError):
    """A reward name that is not in REWARD_NAMES."""

    def __init__(self, unknown: Sequence[str]) -> None:
        self.unknown = tuple(unknown)
        super().__init__(
            f"unknown reward name(s): {', '.join(repr(n) for n in self.unknown)}; "
            f"known rewards: {', '.join(REWARD_NAMES)}"
        )


def check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Validated weights: known names, finite non-negative numbers, a positive sum."""
    unknown = [name for name in weights if name not in _REGISTRY]
    if unknown:
        raise UnknownRewardError(unknown)
    if not weights:
        raise ValueError(f"no rewards requested; choose from: {', '.join(REWARD_NAMES)}")
    clean: dict[str, float] = {}
    for name, value in weights.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ValueError(f"reward weight for {name!r} must be a finite number >= 0, got {value!r}")
        clean[name] = float(value)
    if sum(clean.values()) <= 0:
        raise ValueError("reward weights must not all be zero")
    return clean


def _trl_function(name: str, resources: RewardResources) -> RewardFunction:
    batch_reward = _REGISTRY[name]

    def reward(
        prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> list[float]:
        batch = make_batch(completions or [], kwargs)
        return [float(min(1.0, max(0.0, s))) for s in batch_reward(batch, resources)]

    reward.__name__ = name
    reward.__qualname__ = name
    reward.__doc__ = f"GRPO reward {name!r}: one score in [0, 1] per completion (see models.rewards)."
    return reward


def build_reward_functions(
    weights: Mapping[str, float], resources: RewardResources
) -> tuple[list[RewardFunction], list[float]]:
    """TRL reward functions and their weights, in the order of `weights`.

    Each function has `__name__` equal to its reward name and the TRL signature
    `fn(prompts, completions, **kwargs) -> list[float]`; it reads the dataset columns it needs from the
    keyword arguments and ignores the rest. Raises UnknownRewardError for names not in REWARD_NAMES, and
    MissingResourceError when 'preference' is requested without a preference scorer.
    """
    clean = check_weights(weights)
    if "preference" in clean:
        resources.require_scorer()
    return [_trl_function(name, resources) for name in clean], list(clean.values())


def score_many(
    completions: Sequence[str],
    *,
    guidance: Sequence[Sequence[str]] | None = None,
    guidance_strategies: Sequence[Sequence[str]] | None = None,
    stage: Sequence[str] | None = None,
    seeker_text: Sequence[str] | None = None,
    context_text: Sequence[str] | None = None,
    weights: Mapping[str, float],
    resources: RewardResources,
) -> list[dict[str, float]]:
    """Batched `score_all`: per completion, every reward plus "total". Columns hold one entry per completion.

    'preference' is left out when there is no scorer and it has no positive weight.
    """
    clean = check_weights(weights)
    columns = {
        "guidance": guidance,
        "guidance_strategies": guidance_strategies,
        "stage": stage,
        "seeker_text": seeker_text,
        "context_text": context_text,
    }
    batch = make_batch(list(completions), columns)
    if clean.get("preference", 0.0) > 0:
        resources.require_scorer()
    names = [n for n in REWARD_NAMES if n != "preference" or resources.preference_scorer is not None]
    per_name = {n: _REGISTRY[n](batch, resources) for n in names}
    total_weight = sum(clean.values())
    rows: list[dict[str, float]] = []
    for i in range(len(batch)):
        row = {n: float(min(1.0, max(0.0, per_name[n][i]))) for n in names}
        row["total"] = sum(w * row[n] for n, w in clean.items()) / total_weight
        rows.append(row)
    return rows


def score_all(
    completion: str,
    *,
    guidance: Sequence[str] | None = None,
    guidance_strategies: Sequence[str] | None = None,
    stage: str = "",
    seeker_text: str = "",
    context_text: str = "",
    weights: Mapping[str, float],
    resources: RewardResources,
) -> dict[str, float]:
    """Every reward of one completion plus "total" (the weighted sum divided by the sum of weights)."""
    return score_many(
        [completion],
        guidance=[list(guidance or [])],
        guidance_strategies=[list(guidance_strategies or [])],
        stage=[stage],
        seeker_text=[seeker_text],
        context_text=[context_text],
        weights=weights,
        resources=resources,
    )[0]
