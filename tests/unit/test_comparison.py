"""Win-rates, ties, bootstrap intervals and the sign test; and the stratified evaluation sample."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from models.comparison import composite, sign_test, win_rate
from models.eval_sampling import allocate, sample_eval_turns, turn_stage


def test_sign_test_matches_the_binomial():
    assert sign_test(5, 5) == 1.0
    assert sign_test(10, 0) == pytest.approx(2 / 2**10)
    assert sign_test(8, 2) == pytest.approx(2 * sum(math.comb(10, i) for i in range(3)) / 2**10)
    assert sign_test(0, 0) == 1.0


def test_ties_inside_the_band_count_half():
    result = win_rate([0.50, 0.90, 0.10, 0.52], [0.51, 0.50, 0.50, 0.50], list("abcd"), band=0.05, n_boot=200, seed=1)
    assert (result.wins, result.ties, result.losses) == (1, 2, 1)
    assert result.win_rate == 0.5 and result.sign_test_p == 1.0


def test_a_clear_winner_has_an_interval_above_one_half():
    a = [0.8 + 0.01 * (i % 5) for i in range(60)]
    b = [0.5] * 60
    result = win_rate(a, b, [f"c{i // 3}" for i in range(60)], band=0.02, n_boot=500, seed=7)
    assert result.win_rate == 1.0 and result.ci_low == 1.0 and result.sign_test_p < 1e-10


def test_the_interval_resamples_conversations_not_turns():
    # One conversation wins all its 20 turns, another loses all 20: per conversation this is a coin flip.
    a, b = [1.0] * 20 + [0.0] * 20, [0.0] * 20 + [1.0] * 20
    result = win_rate(a, b, ["x"] * 20 + ["y"] * 20, band=0.1, n_boot=400, seed=3)
    assert result.ci_low == 0.0 and result.ci_high == 1.0  # turns alone would give a narrow band around 0.5


def test_composite_uses_present_metrics_and_refuses_none():
    assert composite({"a": 1.0, "b": 0.0}, {"a": 1, "b": 3}) == 0.25
    assert composite({"a": 0.4}, {"a": 1, "missing": 5}) == 0.4
    with pytest.raises(ValueError, match="none of the composite's metrics"):
        composite({"x": 1.0}, {"a": 1})


def test_allocation_is_proportional_and_keeps_every_stage():
    assert allocate({"A": 100, "B": 50, "C": 2}, 30) == {"A": 19, "B": 10, "C": 1}
    assert allocate({"A": 3, "B": 1}, 10) == {"A": 3, "B": 1}
    assert sum(allocate({"A": 7, "B": 7, "C": 7}, 10).values()) == 10


def _dialogue(i: int) -> dict:
    strategies = ["Question", "Reflection of feelings", "Providing Suggestions"]
    turns = []
    for j in range(6):
        turns += [
            {"speaker": "seeker", "text": f"s{i}.{j}"},
            {"speaker": "supporter", "text": "r", "strategy": strategies[j % 3]},
        ]
    return {"id": f"d{i}", "turns": turns}


def test_sample_is_stratified_seeded_and_stable():
    dialogues = [_dialogue(i) for i in range(20)]
    sample = sample_eval_turns(dialogues, 30, seed=13)
    assert len(sample) == 30
    assert Counter(turn_stage(d, c) for d, c in sample) == {"Exploration": 10, "Comforting": 10, "Action": 10}
    assert sample == sample_eval_turns(dialogues, 30, seed=13)
    assert sample != sample_eval_turns(dialogues, 30, seed=14)
    assert len(sample_eval_turns(dialogues[:2], 150, seed=13)) == 12  # fewer than asked: all of them
