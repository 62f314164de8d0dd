"""Pairwise preference reward model: a MiniLM pair encoder (models.pair_encoder) trained with TRL's RewardTrainer.

Pairs records: {"id", "conversation_id"?, "split"?, "context": [{"speaker", "text", "strategy"?}, ...],
"chosen", "rejected"}. Training (models.reward_training) and scoring read the same input: the last 6
context turns (`reward_context`, tokens cut from the left to `max_length`) and the reply, encoded
separately.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.compute import Compute, inference, resolve_compute
from models.dialogue import render_turns

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

CONTEXT_TURNS = 6  # context turns kept before the reply; 6 beat 3 on ESConv swaps (docs/rewards.md)
MAX_CONTEXT_CHARS = 2400  # cheap character cap before tokenisation (tokens are then cut from the left)
DEFAULT_MAX_LENGTH = 256  # context tokens; the reply has its own budget (models.pair_encoder)
METADATA_FILE = "reward_model.json"
TEXT_FORMAT = "context: last 6 'Speaker: text' turns, left-truncated; reply encoded separately (pair encoder)"
_TURN_START = re.compile(r"^(?:Seeker|Supporter):", re.MULTILINE)


def reward_context(context_text: str) -> str:
    """The context the reward model reads: the last `CONTEXT_TURNS` 'Speaker: text' turns of a rendered context."""
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
    fixed_train = [r for r in pairs if r.get("split") == "train"]
    fixed_eval = [r for r in pairs if r.get("split") == "eval"]
    free = [r for r in pairs if r.get("split") not in ("eval", "train")]
    train, heldout = _hash_split(free, eval_fraction)
    return fixed_train + train, fixed_eval + heldout


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
    """Scores replies in context with a trained reward model folder (raw logits; higher is better).

    The model runs where `compute` says (auto when none is given), in batches sized for that device.
    """

    def __init__(self, model_dir: Path | str, max_length: int | None = None, compute: Compute | None = None) -> None:
        from transformers import AutoTokenizer

        from models.pair_encoder import PairEncoderRewardModel

        model_dir = Path(model_dir)
        if not (model_dir / "config.json").is_file():
            raise FileNotFoundError(f"no reward model in {model_dir} (config.json missing)")
        architectures = json.loads((model_dir / "config.json").read_text()).get("architectures") or []
        if PairEncoderRewardModel.__name__ not in architectures:
            raise ValueError(
                f"{model_dir} holds a {', '.join(architectures) or 'model'} reward model from an older escrag; "
                "retrain it with `escrag stage reward_model`"
            )
        meta_path = model_dir / METADATA_FILE
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = PairEncoderRewardModel.from_pretrained(model_dir)
        self._setup(model, tokenizer, max_length or int(meta.get("max_length", DEFAULT_MAX_LENGTH)), compute)

    @classmethod
    def from_model(
        cls,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        max_length: int,
        compute: Compute | None = None,
    ) -> RewardModelScorer:
        """A scorer around an already loaded model and tokenizer."""
        scorer = cls.__new__(cls)
        scorer._setup(model, tokenizer, max_length, compute)
        return scorer

    def _setup(self, model: Any, tokenizer: Any, max_length: int, compute: Compute | None) -> None:
        if max_length <= 0:
            raise ValueError("max_length must be positive")
        self.compute = compute or resolve_compute()
        self.model = model.to(self.compute.device).eval()
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = self.compute.encode_batch_size

    def place(self, compute: Compute) -> RewardModelScorer:
        """Move the scorer to `compute`'s device (and batch size); returns itself."""
        self._setup(self.model, self.tokenizer, self.max_length, compute)
        return self

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
        device = self.compute.device
        with inference(self.compute):
            for i in range(0, len(rows), self.batch_size):
                batch = [torch.tensor(x, device=device) for x in rows[i : i + self.batch_size]]
                input_ids, mask = self.model.pad_rows(batch)
                logits = self.model(input_ids=input_ids, attention_mask=mask).logits
                scores.extend(float(v) for v in logits.float().reshape(-1).tolist())
        return scores

    def quality(self, replies: Sequence[str]) -> list[float]:
        """The context-free part of the score: the reply-quality head alone (zeros when the head is off)."""
        from models.pair_encoder import REPLY_MAX_TOKENS

        scores: list[float] = []
        self.tokenizer.truncation_side = "right"
        with inference(self.compute):
            for i in range(0, len(replies), self.batch_size):
                batch = self.tokenizer(
                    [(r or "").strip() for r in replies[i : i + self.batch_size]],
                    truncation=True,
                    max_length=REPLY_MAX_TOKENS,
                    padding=True,
                    return_tensors="pt",
                ).to(self.compute.device)
                pooled = self.model.embed(batch["input_ids"], batch["attention_mask"]).pooled
                values = self.model.config.reward_scale * self.model.quality(pooled).squeeze(-1)
                values = values * float(self.model.uses_quality_head)
                scores.extend(float(v) for v in values.float().tolist())
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
