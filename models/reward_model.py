"""Pairwise preference reward model: a MiniLM (BERT) encoder with a scalar head, trained with TRL's RewardTrainer.

Pairs records: {"id", "conversation_id"?, "context": [{"speaker", "text", "strategy"?}, ...], "chosen", "rejected"}.
Training and scoring read the same text, `reward_text(context_text, reply)`, tokenised the same way
(truncated from the left, so the reply survives).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
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
DEFAULT_MAX_LENGTH = 256
METADATA_FILE = "reward_model.json"
TEXT_FORMAT = "last 3 'Speaker: text' context turns + '\\nSupporter: ' + reply, left-truncated"
_TURN_START = re.compile(r"^(?:Seeker|Supporter):", re.MULTILINE)


def reward_text(context_text: str, reply: str) -> str:
    """The one text the reward model reads: the last 3 context turns, then "Supporter: <reply>"."""
    context = (context_text or "").strip()
    starts = [m.start() for m in _TURN_START.finditer(context)]
    if len(starts) > CONTEXT_TURNS:
        context = context[starts[-CONTEXT_TURNS] :]
    context = context[-MAX_CONTEXT_CHARS:]
    line = f"Supporter: {(reply or '').strip()}"
    return f"{context}\n{line}" if context else line


def pair_key(record: dict[str, Any]) -> str:
    """What the train/held-out split groups by: the conversation when known, else the pair id."""
    key = record.get("conversation_id") or record.get("id")
    if key is None:
        raise ValueError(f"preference pair without 'id': {str(record)[:120]}")
    return str(key)


def _bucket(key: str) -> float:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / 16**12


def split_pairs(pairs: Sequence[dict[str, Any]], eval_fraction: float) -> tuple[list[dict], list[dict]]:
    """Deterministic train/held-out split by a hash of `pair_key`; a conversation stays on one side.

    With at least two groups and 0 < eval_fraction < 1 both sides are non-empty.
    """
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction}")
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


def pair_texts(record: dict[str, Any]) -> tuple[str, str]:
    """(chosen text, rejected text) of a pair record, both in `reward_text` form."""
    context = record.get("context") or []
    context_text = context if isinstance(context, str) else render_turns(context)
    texts = []
    for side in ("chosen", "rejected"):
        value = record.get(side)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"pair {record.get('id')!r}: {side!r} must be a non-empty string")
        texts.append(reward_text(context_text, value))
    return texts[0], texts[1]


def _encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], max_length: int) -> list[list[int]]:
    tokenizer.truncation_side = "left"
    return tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]


class RewardModelScorer:
    """Scores replies in context with a trained reward model folder (raw logits; higher is better). CPU only."""

    def __init__(self, model_dir: Path | str, max_length: int | None = None, batch_size: int = 32) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        model_dir = Path(model_dir)
        if not (model_dir / "config.json").is_file():
            raise FileNotFoundError(f"no reward model in {model_dir} (config.json missing)")
        meta_path = model_dir / METADATA_FILE
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=1)
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

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        """Raw scores of texts already in `reward_text` form."""
        import torch

        scores: list[float] = []
        with torch.no_grad():
            for i in range(0, len(texts), self.batch_size):
                ids = _encode(self.tokenizer, list(texts[i : i + self.batch_size]), self.max_length)
                width = max(len(x) for x in ids)
                pad = self.tokenizer.pad_token_id or 0
                input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids])
                mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
                logits = self.model(input_ids=input_ids, attention_mask=mask).logits
                scores.extend(float(v) for v in logits.reshape(-1).tolist())
        return scores

    def score(self, contexts: list[str], replies: list[str]) -> list[float]:
        """Raw score of each reply given its rendered context (only the reply is judged, never reasoning)."""
        if len(contexts) != len(replies):
            raise ValueError(f"{len(contexts)} contexts for {len(replies)} replies")
        return self.score_texts([reward_text(c, r) for c, r in zip(contexts, replies, strict=True)])


def pairwise_accuracy(scorer: RewardModelScorer, pairs: Sequence[dict[str, Any]]) -> float:
    """Share of pairs where the chosen reply scores strictly above the rejected one (NaN without pairs)."""
    if not pairs:
        return math.nan
    texts = [t for record in pairs for t in pair_texts(record)]
    scores = scorer.score_texts(texts)
    wins = sum(scores[i] > scores[i + 1] for i in range(0, len(scores), 2))
    return wins / len(pairs)


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
) -> dict:
    """Train a pairwise reward model on CPU and save only the final model and tokenizer to `output_dir`.

    Returns {"heldout_pairwise_accuracy", "train_pairwise_accuracy", "n_train", "n_heldout", "train_loss"};
    the held-out accuracy is NaN when there is nothing to hold out. Logging to MLflow is the caller's job.
    """
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed
    from trl import RewardConfig, RewardTrainer

    train_pairs, heldout_pairs = split_pairs(pairs, eval_fraction)
    if not train_pairs:
        raise ValueError("no preference pairs to train on")
    texts = [pair_texts(record) for record in train_pairs]
    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(encoder_path)
    model = AutoModelForSequenceClassification.from_pretrained(encoder_path, num_labels=1)
    dataset = Dataset.from_dict(
        {
            "chosen_ids": _encode(tokenizer, [c for c, _ in texts], max_length),
            "rejected_ids": _encode(tokenizer, [r for _, r in texts], max_length),
        }
    )
    logger.info("training reward model on %d pairs (%d held out)", len(train_pairs), len(heldout_pairs))
    with tempfile.TemporaryDirectory(prefix="reward-trainer-") as scratch:
        config = RewardConfig(
            output_dir=scratch,
            num_train_epochs=epochs,
            learning_rate=learning_rate,
            per_device_train_batch_size=batch_size,
            seed=seed,
            data_seed=seed,
            max_length=max_length,
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
        trainer = RewardTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
        result = trainer.train()
    model = trainer.model
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    scorer = RewardModelScorer.from_model(model, tokenizer, max_length)
    metrics = {
        "heldout_pairwise_accuracy": pairwise_accuracy(scorer, heldout_pairs),
        "train_pairwise_accuracy": pairwise_accuracy(scorer, train_pairs),
        "n_train": len(train_pairs),
        "n_heldout": len(heldout_pairs),
        "train_loss": float(result.training_loss),
    }
    meta = {"max_length": max_length, "text_format": TEXT_FORMAT, "encoder_path": str(encoder_path), "seed": seed}
    (output_dir / METADATA_FILE).write_text(json.dumps({**meta, "metrics": metrics}, indent=2, default=str))
    logger.info("reward model saved to %s: %s", output_dir, metrics)
    return metrics
