"""models/preference_eval: the swap-pair win rate and the empathy split, with scorers whose answer is known."""

from __future__ import annotations

import pytest

from flows.cli import main
from models.preference_eval import empathy_split, render_report, swap_win_rates


class WordOverlap:
    """Scores a reply by the words it shares with its context: a relevance judge with a known answer."""

    def score(self, contexts: list[str], replies: list[str]) -> list[float]:
        return [len(set(c.lower().split()) & set(r.lower().split())) for c, r in zip(contexts, replies, strict=True)]


class Length:
    def score(self, contexts: list[str], replies: list[str]) -> list[float]:
        return [float(len(r)) for r in replies]


def _pair(i: int, chosen: str, rejected: str) -> dict:
    return {
        "id": f"p{i}",
        "context": [{"speaker": "seeker", "text": f"my dog rex is ill {i}"}],
        "chosen": chosen,
        "rejected": rejected,
    }


def test_swap_win_rate_counts_strict_wins_per_scorer() -> None:
    pairs = [_pair(0, "is rex ill again?", "exams are hard"), _pair(1, "poor rex", "a long reply about exams")]
    rates = swap_win_rates({"overlap": WordOverlap(), "length": Length()}, pairs)
    assert rates == {"overlap": 1.0, "length": 0.5}


def _dialogue(cid: str, empathy: int, reply: str) -> dict:
    turns = [
        {"speaker": "seeker", "text": "I lost my job today and I feel awful"},
        {"speaker": "supporter", "text": reply, "strategy": "Question"},
    ]
    return {"id": cid, "split": "eval", "turns": turns, "survey": {"seeker_empathy": empathy}}


def test_empathy_split_auc_follows_the_scorer() -> None:
    valid = [_dialogue(f"h{i}", 5, "a long and very caring reply " * 3) for i in range(3)]
    valid += [_dialogue(f"l{i}", 1, "ok") for i in range(3)]
    result = empathy_split(valid, {"length": Length()})
    row = result["auc"][">=4 vs <=3"]["length"]
    assert row["reply_auc"] == pytest.approx(1.0) and row["n_conversations"] == [3, 3]
    text = render_report({"conversations": 6, "pairs": 0, "seed": 13, "win_rate": {"length": 0.5}, "empathy": result})
    assert "length" in text and "1.000" in text


def test_score_without_input_or_pairs_is_a_usage_error(repo_root, capsys) -> None:
    assert main(["--project", str(repo_root), "score"]) == 2
    assert "--esconv-pairs" in capsys.readouterr().err
