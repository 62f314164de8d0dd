"""Pairwise preference reward model: a MiniLM pair encoder (models.pair_encoder) trained with TRL's RewardTrainer.

Pairs records: {"id", "conversation_id"?, "split"?, "context": [{"speaker", "text", "strategy"?}, ...],
"chosen", "rejected"}. Training and scoring read the same input: the last 3 context turns
(`reward_context`, tokens cut from the left to `max_length`) and the reply, encoded separately.
The loss is RewardTrainer's pairwise (Bradley-Terry) loss plus, with `in_batch_weight`, a contrastive
term: each context must also prefer its chosen reply over every other reply in the batch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import re
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.dialogue import render_turns

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

CONTEXT_TURNS = 3  # context turns kept before the reply
MAX_CONTEXT_CHARS = 1200  # cheap character cap before tokenisation (tokens are then cut from the left)
DEFAULT_MAX_LENGTH = 128  # context tokens; the reply has its own budget (models.pair_encoder)
METADATA_FILE = "reward_model.json"
TEXT_FORMAT = "context: last 3 'Speaker: text' turns, left-truncated; reply encoded separately (pair encoder)"
CENTER_SAMPLE = 2000  # training pairs whose mean logit becomes the model's reward_center
_TURN_START = re.compile(r"^(?:Seeker|Supporter):", re.MULTILINE)


def reward_context(context_text: str) -> str:
    """The context the reward model reads: the last 3 'Speaker: text' turns of a rendered context."""
    context = (context_text or "").strip()
    starts = [m.start() for m in _TURN_START.finditer(context)]
    if len(starts) > CONTEXT_TURNS:
        context = context[starts[-CONTEXT_TURNS] :]
    return context[-MAX_CONTEXT_CHARS:]


def pair_key(record: dict[str, Any]) -> str:
    """What the train/held-out split groups by: the conversation when known, else the pair id."""
    key = record.get("conversation_id") or record.get("id")
    if key is None:
        raise ValueError(f"preference pair without 'id': {str(record)[:120]}")
    return str(key)


def _bucket(key: str) -> float:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / 16**12


def split_pairs(pairs: Sequence[dict[str, Any]], eval_fraction: float) -> tuple[list[dict], list[dict]]:
    """Deterministic train/held-out split; a conversation stays on one side.

    A record's own `split` decides when it has one ("eval" is held out, "train" is not), so data that
    already keeps its eval conversations apart (ESConv) never trains on them. The rest is split by a
    hash of `pair_key` with `eval_fraction`; with at least two groups and 0 < eval_fraction < 1 both
    sides are non-empty.
    """
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction}")
    fixed = {"eval": [r for r in pairs if r.get("split") == "eval"], "train": []}
    fixed["train"] = [r for r in pairs if r.get("split") == "train"]
    free = [r for r in pairs if r.get("split") not in ("eval", "train")]
    train, heldout = _hash_split(free, eval_fraction if free or not fixed["eval"] else 0.0)
    return fixed["train"] + train, fixed["eval"] + heldout


def _hash_split(pairs: Sequence[dict[str, Any]], eval_fraction: float) -> tuple[list[dict], list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in pairs:
        groups[pair_key(record)].append(record)
    order = sorted(groups, key=lambda k: (_bucket(k), k))
    held = {k for k in order if _bucket(k) < eval_fraction}
    if eval_fraction > 0 and len(order) >= 2:
        if not held:
            held = {order[0]}
        elif len(held) == len(order):
            held.discard(order[-1])
    train = [r for k in order if k not in held for r in groups[k]]
    heldout = [r for k in order if k in held for r in groups[k]]
    return train, heldout


def pair_sides(record: dict[str, Any]) -> tuple[str, str, str]:
    """(context, chosen, rejected) of a pair record; the context in `reward_context` form."""
    context = record.get("context") or []
    context_text = context if isinstance(context, str) else render_turns(context)
    sides = []
    for side in ("chosen", "rejected"):
        value = record.get(side)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"pair {record.get('id')!r}: {side!r} must be a non-empty string")
        sides.append(value.strip())
    return reward_context(context_text), sides[0], sides[1]


class RewardModelScorer:
    """Scores replies in context with a trained reward model folder (raw logits; higher is better). CPU only."""

    def __init__(self, model_dir: Path | str, max_length: int | None = None, batch_size: int = 32) -> None:
        from transformers import AutoTokenizer

        from models.pair_encoder import PairEncoderRewardModel

        model_dir = Path(model_dir)
        if not (model_dir / "config.json").is_file():
            raise FileNotFoundError(f"no reward model in {model_dir} (config.json missing)")
        meta_path = model_dir / METADATA_FILE
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = PairEncoderRewardModel.from_pretrained(model_dir)
        self._setup(model, tokenizer, max_length or int(meta.get("max_length", DEFAULT_MAX_LENGTH)), batch_size)

    @classmethod
    def from_model(
        cls, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, max_length: int, batch_size: int = 32
    ) -> RewardModelScorer:
        """A scorer around an already loaded model and tokenizer."""
        scorer = cls.__new__(cls)
        scorer._setup(model, tokenizer, max_length, batch_size)
        return scorer

    def _setup(self, model: Any, tokenizer: Any, max_length: int, batch_size: int) -> None:
        if max_length <= 0 or batch_size <= 0:
            raise ValueError("max_length and batch_size must be positive")
        self.model = model.to("cpu").eval()
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = batch_size

    def score(self, contexts: Sequence[str], replies: Sequence[str]) -> list[float]:
        """Raw score of each reply given its rendered context (only the reply is judged, never reasoning)."""
        import torch

        from models.pair_encoder import encode_pair

        if len(contexts) != len(replies):
            raise ValueError(f"{len(contexts)} contexts for {len(replies)} replies")
        rows = [
            encode_pair(self.tokenizer, reward_context(c), (r or "").strip(), self.max_length)
            for c, r in zip(contexts, replies, strict=True)
        ]
        scores: list[float] = []
        with torch.no_grad():
            for i in range(0, len(rows), self.batch_size):
                batch = rows[i : i + self.batch_size]
                width = max(len(x) for x in batch)
                input_ids = torch.tensor([x + [0] * (width - len(x)) for x in batch])
                mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in batch])
                logits = self.model(input_ids=input_ids, attention_mask=mask).logits
                scores.extend(float(v) for v in logits.reshape(-1).tolist())
        return scores

    def score_pairs(self, pairs: Sequence[dict[str, Any]]) -> tuple[list[float], list[float]]:
        """(chosen scores, rejected scores) of preference records."""
        sides = [pair_sides(record) for record in pairs]
        contexts = [c for c, _, _ in sides]
        return self.score(contexts, [a for _, a, _ in sides]), self.score(contexts, [b for _, _, b in sides])


def pairwise_accuracy(scorer: RewardModelScorer, pairs: Sequence[dict[str, Any]]) -> float:
    """Share of pairs where the chosen reply scores strictly above the rejected one (NaN without pairs)."""
    if not pairs:
        return math.nan
    chosen, rejected = scorer.score_pairs(pairs)
    return sum(c > r for c, r in zip(chosen, rejected, strict=True)) / len(pairs)


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
                contexts, replies = outputs.context_embeddings, outputs.reply_embeddings
                n = len(contexts) // 2  # rows: the chosen half, then the rejected half, same contexts
                logits = model.score_embeddings(contexts[:n, None, :], replies[None, :, :])
                target = torch.arange(n, device=logits.device)
                loss = loss + self.in_batch_weight * torch.nn.functional.cross_entropy(logits, target)
            return (loss, outputs) if return_outputs else loss

    return PairRewardTrainer


def _reward_config(scratch: str, epochs: float, learning_rate: float, batch_size: int, seed: int, max_length: int):
    from trl import RewardConfig

    return RewardConfig(
        output_dir=scratch,
        num_train_epochs=epochs,
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        seed=seed,
        data_seed=seed,
        max_length=max_length + 96,  # context + reply rows (models.pair_encoder.REPLY_MAX_TOKENS)
        use_cpu=True,
        bf16=False,
        fp16=False,
        activation_checkpointing=False,
        report_to="none",
        save_strategy="no",
        eval_strategy="no",
        logging_steps=10,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _center(scorer: RewardModelScorer, pairs: Sequence[dict[str, Any]]) -> float:
    """Mean logit of the chosen and rejected replies of (a sample of) the training pairs."""
    chosen, rejected = scorer.score_pairs(list(pairs)[:CENTER_SAMPLE])
    return statistics.fmean(chosen + rejected)


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
) -> dict:
    """Train a pairwise reward model on CPU and save only the final model and tokenizer to `output_dir`.

    Returns {"heldout_pairwise_accuracy", "train_pairwise_accuracy", "n_train", "n_heldout", "train_loss"};
    the held-out accuracy is NaN when there is nothing to hold out. Logging to MLflow is the caller's job.
    """
    from datasets import Dataset
    from transformers import AutoTokenizer, set_seed

    from models.pair_encoder import PairEncoderRewardModel, encode_pair

    train_pairs, heldout_pairs = split_pairs(pairs, eval_fraction)
    if not train_pairs:
        raise ValueError("no preference pairs to train on")
    sides = [pair_sides(record) for record in train_pairs]
    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(encoder_path)
    model = PairEncoderRewardModel.from_encoder(encoder_path, tokenizer)
    dataset = Dataset.from_dict(
        {
            "chosen_ids": [encode_pair(tokenizer, c, a, max_length) for c, a, _ in sides],
            "rejected_ids": [encode_pair(tokenizer, c, b, max_length) for c, _, b in sides],
        }
    )
    logger.info("training reward model on %d pairs (%d held out)", len(train_pairs), len(heldout_pairs))
    with tempfile.TemporaryDirectory(prefix="reward-trainer-") as scratch:
        config = _reward_config(scratch, epochs, learning_rate, batch_size, seed, max_length)
        trainer = _trainer_class()(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
        trainer.in_batch_weight = in_batch_weight
        result = trainer.train()
    model = trainer.model
    scorer = RewardModelScorer.from_model(model, tokenizer, max_length)
    model.config.reward_center = _center(scorer, train_pairs)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    metrics = {
        "heldout_pairwise_accuracy": pairwise_accuracy(scorer, heldout_pairs),
        "train_pairwise_accuracy": pairwise_accuracy(scorer, train_pairs),
        "n_train": len(train_pairs),
        "n_heldout": len(heldout_pairs),
        "train_loss": float(result.training_loss),
        "reward_center": float(model.config.reward_center),
    }
    meta = {"max_length": max_length, "text_format": TEXT_FORMAT, "encoder_path": str(encoder_path), "seed": seed}
    (output_dir / METADATA_FILE).write_text(json.dumps({**meta, "metrics": metrics}, indent=2, default=str))
    logger.info("reward model saved to %s: %s", output_dir, metrics)
    return metrics
