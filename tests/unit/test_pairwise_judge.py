import pytest

from models.comparison import rate_outcomes
from models.pairwise_judge import judge_pair, parse_verdict


class _AlwaysFirst:
    """A judge with pure position bias: it always prefers reply A."""

    def complete(self, messages, *, max_tokens=128, temperature=0.7):
        return '{"better": "A", "rationale": "first"}'


@pytest.mark.parametrize(
    ("text", "verdict"),
    [('{"better": "B", "rationale": "x"}', "B"), ('better: "tie"', "tie"), ("Better = a, because", "A"), ("?", None)],
)
def test_verdicts_are_parsed(text, verdict):
    assert parse_verdict(text) == verdict


def test_position_bias_cancels_out_in_both_orders():
    judged = judge_pair(_AlwaysFirst(), "Exploration", "Seeker: hi", "reply one", "reply two")
    assert judged.outcome == 0.5 and judged.verdicts == ("A", "A")


def test_partial_outcomes_count_as_wins_or_losses_by_side():
    rate = rate_outcomes([1.0, 0.75, 0.5, 0.25], ["a", "a", "b", "c"], band=0.0, n_boot=50, seed=1)
    assert (rate.wins, rate.ties, rate.losses) == (2, 1, 1) and rate.win_rate == pytest.approx(0.625)
