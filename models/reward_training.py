"""Training the preference reward model (models.pair_encoder) with TRL's RewardTrainer, where `compute` says.

The loss is RewardTrainer's pairwise (Bradley-Terry) loss plus, with `in_batch_weight`, a contrastive
term: each context must also prefer its chosen reply over every other reply in the batch (the
rejected ones and the other contexts' chosen ones). After training the mean logit of the training
replies becomes the model's `reward_center`, so that sigmoid(score) spreads around 0.5.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.compute import Compute, is_main_process, resolve_compute
from models.reward_model import (
    METADATA_FILE,
    TEXT_FORMAT,
    RewardModelScorer,
    pair_sides,
    split_pairs,
)

logger = logging.getLogger(__name__)

CENTER_SAMPLE = 2000  # training pairs whose mean logit becomes reward_center (and give the train accuracy)


@functools.cache
def _trainer_class() -> type:
    """RewardTrainer plus the in-batch contrastive term (built on first use: importing TRL is slow)."""
    import torch
    from trl import RewardTrainer

    class PairRewardTrainer(RewardTrainer):
        in_batch_weight = 1.0

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss, outputs = super().compute_loss(model, inputs, return_outputs=True)
            if self.in_batch_weight > 0:
                n = len(outputs.logits) // 2  # rows: the chosen half, then the rejected half, same contexts
                # Under DDP `model` is the wrapper; the scoring head lives on the module it wraps.
                logits = self.accelerator.unwrap_model(model).score(
                    outputs.contexts.rows(slice(0, n)), outputs.replies, pairwise=True
                )
                target = torch.arange(n, device=logits.device)
                loss = loss + self.in_batch_weight * torch.nn.functional.cross_entropy(logits, target)
            return (loss, outputs) if return_outputs else loss

    return PairRewardTrainer


def _reward_config(
    scratch: str, epochs: float, learning_rate: float, batch_size: int, seed: int, max_length: int, compute: Compute
):
    from trl import RewardConfig

    from models.pair_encoder import REPLY_MAX_TOKENS

    return RewardConfig(
        output_dir=scratch,
        num_train_epochs=epochs,
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        seed=seed,
        data_seed=seed,
        max_length=max_length + REPLY_MAX_TOKENS,  # a row holds the context and the reply
        **compute.trainer_args(),
        activation_checkpointing=False,
        report_to="none",
        save_strategy="no",
        eval_strategy="no",
        logging_steps=10,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _center_and_accuracy(scorer: RewardModelScorer, pairs: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """Mean logit of the chosen and rejected replies, and pairwise accuracy, on (a sample of) the pairs.

    One scoring pass serves both: the train accuracy is a sanity check, the held-out one is the measure.
    """
    chosen, rejected = scorer.score_pairs(list(pairs)[:CENTER_SAMPLE])
    accuracy = sum(c > r for c, r in zip(chosen, rejected, strict=True)) / len(chosen)
    return statistics.fmean(chosen + rejected), accuracy


KINDS = ("preference", "dialogue_swap")  # held-out accuracy is also reported per kind of pair
DIALOGUE_SWAP = "dialogue_swap"


def pair_kind(record: dict[str, Any]) -> str:
    return DIALOGUE_SWAP if record.get("kind") == DIALOGUE_SWAP else "preference"


def rehearsal_pairs(
    dialogues: Sequence[dict[str, Any]], pairs: Sequence[dict[str, Any]], per_dialogue: int, seed: int
) -> list[dict[str, Any]]:
    """Off-context swap pairs (models.esconv_pairs.build_pairs) from the project's dialogues that no
    preference pair already covers, marked `kind: dialogue_swap`.

    Why: judge-labelled pairs compare two replies to one context, so they teach style and nothing about
    fit; trained on them alone the encoder forgets the relevance it started with (ESConv-valid swaps:
    0.81 zero-shot, 0.77 after training on the 118 starter pairs). Swap pairs from the project's own
    dialogues keep that prior in training, and their held-out half checks it (0.83 with them).
    """
    from models.esconv_pairs import build_pairs

    if per_dialogue <= 0:
        return []
    covered = {p.get("conversation_id") for p in pairs} - {None}
    fresh = [d for d in dialogues if d.get("conversation_id", d.get("id")) not in covered and d.get("turns")]
    return [{**pair, "kind": DIALOGUE_SWAP} for pair in build_pairs(fresh, seed=seed, per_conversation=per_dialogue)]


def heldout_accuracies(scorer: RewardModelScorer, heldout: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Pairwise accuracy on all held-out pairs ("all") and on each kind of pair (NaN where none); one
    scoring pass."""
    chosen, rejected = scorer.score_pairs(list(heldout)) if heldout else ([], [])
    wins = [(pair_kind(p), c > r) for p, c, r in zip(heldout, chosen, rejected, strict=True)]

    def share(kinds: tuple[str, ...]) -> float:
        picked = [won for kind, won in wins if kind in kinds]
        return sum(picked) / len(picked) if picked else math.nan

    return {"all": share(KINDS)} | {kind: share((kind,)) for kind in KINDS}


def select_model(start: dict[str, float], trained: dict[str, float]) -> tuple[str, str]:
    """Keep "trained" only when it beats the zero-shot start on all held-out pairs and is no worse on any
    kind of pair (preference, dialogue swap), else "start". With no held-out pairs (NaN) there is nothing
    to compare, and the trained model is kept."""
    if math.isnan(start["all"]) or math.isnan(trained["all"]):
        return "trained", "no held-out pairs to compare the trained model with its start"
    worse = [k for k in KINDS if not math.isnan(start.get(k, math.nan)) and trained[k] < start[k]]
    if trained["all"] > start["all"] and not worse:
        return "trained", f"held-out accuracy {trained['all']:.3f} > start {start['all']:.3f}" + _by_kind(
            start, trained
        )
    why = f"worse on {', '.join(worse)} pairs" if worse else "training did not help"
    return "start", f"held-out accuracy {trained['all']:.3f} vs start {start['all']:.3f}: {why}" + _by_kind(
        start, trained
    )


def _by_kind(start: dict[str, float], trained: dict[str, float]) -> str:
    parts = [f"{k} {trained[k]:.3f} vs {start[k]:.3f}" for k in KINDS if not math.isnan(start.get(k, math.nan))]
    return f" ({'; '.join(parts)})" if parts else ""


def selection_from_metrics(metrics: dict[str, float]) -> tuple[str, str]:
    """select_model on the accuracies train_reward_model reported."""
    return select_model(*(_accuracies(metrics, side) for side in ("start", "trained")))


def _accuracies(metrics: dict[str, float], side: str) -> dict[str, float]:
    found = {"all": metrics[f"{side}_heldout_pairwise_accuracy"]}
    return found | {k: metrics.get(f"{side}_heldout_{k}_accuracy", math.nan) for k in KINDS}


def zero_shot_scorer(
    encoder_path: str, *, interaction: str, quality_head: bool, max_length: int, compute: Compute | None = None
) -> RewardModelScorer:
    """The untrained start: the sentence encoder's own fit of reply to context (what training must beat)."""
    from transformers import AutoTokenizer

    from models.pair_encoder import PairEncoderRewardModel

    tokenizer = AutoTokenizer.from_pretrained(encoder_path)
    model = PairEncoderRewardModel.from_encoder(encoder_path, tokenizer, interaction, quality_head)
    return RewardModelScorer.from_model(model, tokenizer, max_length, compute)


def train_reward_model(
    pairs: list[dict],
    *,
    encoder_path: str,
    output_dir: Path,
    epochs: float,
    learning_rate: float,
    batch_size: int,
    eval_fraction: float,
    seed: int,
    max_length: int,
    in_batch_weight: float = 1.0,
    interaction: str = "cosine",
    quality_head: bool = False,
    compute: Compute | None = None,
) -> dict:
    """Train a pairwise reward model where `compute` says; rank 0 saves only the final model and tokenizer.

    The zero-shot start competes with the trained model on the held-out pairs (`select_model`); the one
    kept is saved. Returns {"heldout_pairwise_accuracy" (of the kept model), "start_heldout_pairwise_accuracy",
    "trained_heldout_pairwise_accuracy", the same per kind of pair ("start_heldout_preference_accuracy", ...),
    "kept_start", "train_pairwise_accuracy", "n_train", "n_heldout",
    "train_loss", "reward_center"}; accuracies are NaN when there is nothing to hold out. Logging to MLflow
    is the caller's job.
    """
    from datasets import Dataset
    from transformers import AutoTokenizer, set_seed

    from models.pair_encoder import PairEncoderRewardModel, encode_pair

    compute = compute or resolve_compute()
    train_pairs, heldout_pairs = split_pairs(pairs, eval_fraction)
    if not train_pairs:
        raise ValueError("no preference pairs to train on")
    sides = [pair_sides(record) for record in train_pairs]
    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(encoder_path)
    model = PairEncoderRewardModel.from_encoder(encoder_path, tokenizer, interaction, quality_head)
    # The zero-shot start (the encoder's own cosine) is a candidate too: training must beat it.
    start = PairEncoderRewardModel.from_encoder(encoder_path, tokenizer, interaction, quality_head)
    start_accuracy = heldout_accuracies(
        RewardModelScorer.from_model(start, tokenizer, max_length, compute), heldout_pairs
    )
    dataset = Dataset.from_dict(
        {
            "chosen_ids": [encode_pair(tokenizer, c, a, max_length) for c, a, _ in sides],
            "rejected_ids": [encode_pair(tokenizer, c, b, max_length) for c, _, b in sides],
        }
    )
    logger.info("training reward model on %d pairs (%d held out)", len(train_pairs), len(heldout_pairs))
    with tempfile.TemporaryDirectory(prefix="reward-trainer-") as scratch:
        config = _reward_config(scratch, epochs, learning_rate, batch_size, seed, max_length, compute)
        trainer = _trainer_class()(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
        trainer.in_batch_weight = in_batch_weight
        result = trainer.train()
    trained_accuracy = heldout_accuracies(
        RewardModelScorer.from_model(trainer.model, tokenizer, max_length, compute), heldout_pairs
    )
    selected, reason = select_model(start_accuracy, trained_accuracy)
    model = start if selected == "start" else trainer.model
    logger.info("reward model: keeping the %s model (%s)", selected, reason)
    scorer = RewardModelScorer.from_model(model, tokenizer, max_length, compute)
    model.config.reward_center, train_accuracy = _center_and_accuracy(scorer, train_pairs)
    metrics = {
        # centring shifts every score alike, so the kept model's accuracy is the one measured above
        "heldout_pairwise_accuracy": (start_accuracy if selected == "start" else trained_accuracy)["all"],
        "start_heldout_pairwise_accuracy": start_accuracy["all"],
        "trained_heldout_pairwise_accuracy": trained_accuracy["all"],
        **{
            f"{side}_heldout_{k}_accuracy": acc[k]
            for side, acc in (("start", start_accuracy), ("trained", trained_accuracy))
            for k in KINDS
        },
        "kept_start": float(selected == "start"),
        "train_pairwise_accuracy": train_accuracy,  # on the first CENTER_SAMPLE training pairs
        "n_train": len(train_pairs),
        "n_heldout": len(heldout_pairs),
        "train_loss": float(result.training_loss),
        "reward_center": float(model.config.reward_center),
    }
    meta = {
        "selected": selected,
        "selection_reason": reason,
        "interaction": interaction,
        "quality_head": quality_head,
        "max_length": max_length,
        "text_format": TEXT_FORMAT,
        "encoder_path": str(encoder_path),
        "seed": seed,
    }
    if is_main_process():
        _save(model, tokenizer, Path(output_dir), {**meta, "metrics": metrics})
        logger.info("reward model saved to %s: %s", output_dir, metrics)
    return metrics


def _save(model: Any, tokenizer: Any, output_dir: Path, meta: dict[str, Any]) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    (output_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, default=str))
