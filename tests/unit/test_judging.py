"""Judging replies: only the reply counts, an empty reply scores worst, summaries carry ESConv metrics."""

from __future__ import annotations

from models.evaluator_training import train_evaluators
from models.judging import judge_replies, reply_of, summarize_replies
from models.schema import REPLY_METRICS, RISK_ATTENDED, STRATEGY_MATCH
from tests.unit.test_evaluators import _toy_dialogues


def test_reply_of_each_style():
    assert reply_of("<think>plan</think> Hello there.", "think") == "Hello there."
    assert reply_of("plan without end", "think") == ""
    assert reply_of("  Hello there. ", "chat") == "Hello there."


def test_empty_replies_score_worst_and_strategy_is_matched():
    evaluators = train_evaluators(_toy_dialogues(), [], c=1.0, min_df=1, seed=13)
    rows = judge_replies(
        ["How are you sleeping these days?", ""], ["I feel low."] * 2, ["Question", "Question"], evaluators
    )
    assert rows[0][STRATEGY_MATCH] == 1.0 and rows[0]["strategy"] == "Question"
    assert rows[1][STRATEGY_MATCH] == 0.0 and rows[1]["strategy"] == "none" and rows[1]["empty_reply"] == 1.0
    assert RISK_ATTENDED not in rows[0]  # no DiaSafety evaluator trained: the metric is absent, not faked
    assert set(REPLY_METRICS) >= {STRATEGY_MATCH, RISK_ATTENDED}


def test_summary_has_means_esconv_metrics_and_strategy_mix():
    evaluators = train_evaluators(_toy_dialogues(), [], c=1.0, min_df=1, seed=13)
    replies = ["How are you sleeping?", "You are not alone in this."]
    completions = [f"<think>x</think>{r}" for r in replies]
    rows = judge_replies(replies, ["I feel low."] * 2, ["Question", "Question"], evaluators)
    summary = summarize_replies(rows, replies, ["How are you sleeping?", "What happened?"], completions)
    assert summary[STRATEGY_MATCH] == 0.5 and summary["format_compliance"] == 1.0
    assert summary["strategy_distribution"] == {"Affirmation and Reassurance": 0.5, "Question": 0.5}
    assert {"bleu_2", "bleu_4", "rouge_l", "distinct_1", "distinct_2", "length"} <= set(summary)
    assert summary["reply_words"] == 5.0  # 4 and 6 words
