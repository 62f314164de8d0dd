from dataclasses import dataclass

import pytest

from models.config import Params
from tasks.registry import Decision, gate


@dataclass
class _Project:
    params: Params


def _params(min_delta=0.0, min_format=0.5) -> _Project:
    return _Project(
        Params.model_validate(
            {"promote": {"metric": "reward_total", "min_delta": min_delta, "min_format_compliance": min_format}}
        )
    )


def _summary(total, fmt=1.0):
    return {"reward_total": total, "format_compliance": fmt}


def test_beats_base_without_champion():
    passed, reason = gate(_params(), _summary(0.6), _summary(0.4), None)
    assert passed and "> base 0.400" in reason and "champion" not in reason


def test_must_also_beat_champion():
    passed, reason = gate(_params(), _summary(0.6), _summary(0.4), _summary(0.7))
    assert not passed and "<= champion 0.700" in reason


def test_min_delta_applies():
    passed, _ = gate(_params(min_delta=0.25), _summary(0.6), _summary(0.4), None)
    assert not passed


def test_format_compliance_floor():
    passed, reason = gate(_params(min_format=0.9), _summary(0.9, fmt=0.5), _summary(0.1), None)
    assert not passed and "format compliance 0.50 < 0.9" in reason


def test_unknown_metric_names_the_key():
    project = _Project(Params.model_validate({"promote": {"metric": "bogus"}}))
    with pytest.raises(KeyError, match="promote.metric"):
        gate(project, _summary(0.6), _summary(0.4), None)


def test_decision_summary_ends_with_champion_line():
    text = Decision("3", True, "why", "3").summary()
    assert text.splitlines()[-1] == "champion: escrag-policy version 3"
    assert Decision("4", False, "why", None).summary().splitlines()[-1] == "champion: none"
