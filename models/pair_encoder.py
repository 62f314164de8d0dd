"""The reward model's architecture: a siamese MiniLM pair encoder with a reply-quality head.

One input row is `[CLS] context [SEP] reply [SEP]` (`encode_pair`), so TRL's RewardTrainer, which
only knows token rows, trains it unchanged. The model splits each row at its first [SEP] and encodes
context and reply *separately* with the same encoder. Its logit is

    reward_scale * (fit(context, reply) + quality(reply)) - reward_center

* `fit` is how well the reply answers this seeker, by `reward_interaction`: "cosine" (default) of the
  mean-pooled vectors, or "maxsim", the mean over reply tokens of their best cosine with a context
  token (late interaction, as ColBERT). Zero-shot on ESConv reply swaps MaxSim ranks the gold reply
  first more often (84% against 81%), but after pairwise training on 2,560 ESConv-train pairs cosine
  leads (88.5% against 86.8%), so cosine is the default (docs/rewards.md).
* `quality` is a linear head on the reply embedding alone: what makes a reply better whatever the
  context (warmth, a question that invites, no lecturing). It shares the scale, so that under one
  learning rate it moves as fast as the cosine. It is off unless `reward_quality_head` (params
  `reward_model.quality_head`): trained on ESConv reply swaps it ranks at chance alone (0.50) and only
  adds noise to the fit (0.898 with it, 0.902 without, docs/rewards.md). Judge-labelled pairs that
  compare replies to one context are what it is for. Folders saved before the switch keep it on.
* `reward_center` is set after training to the mean logit of the training replies, so that a sigmoid
  of the logit spreads around 0.5 (the GRPO 'preference' reward) instead of saturating.

Why not a cross-encoder (BertForSequenceClassification over the joint text): on ESConv reply swaps it
learnt slower and stayed below the zero-shot relevance of MiniLM (79% against 81%); starting from
MiniLM's sentence space keeps that relevance from the first step (docs/rewards.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import BertConfig, BertModel, BertPreTrainedModel, PreTrainedTokenizerBase
from transformers.utils import ModelOutput

DEFAULT_SCALE = 20.0  # cosine -> logit; a cosine gap of 0.1 is a preference of sigmoid(2) = 0.88
REPLY_MAX_TOKENS = 96
INTERACTIONS = ("cosine", "maxsim")


@dataclass(frozen=True)
class Encoded:
    """Token rows through the encoder: unit token vectors (rows, len, hidden), mask (rows, len) and the
    unit mean-pooled vector (rows, hidden)."""

    tokens: torch.Tensor
    mask: torch.Tensor
    pooled: torch.Tensor

    def rows(self, selection: slice) -> Encoded:
        return Encoded(self.tokens[selection], self.mask[selection], self.pooled[selection])


@dataclass
class PairRewardOutput(ModelOutput):
    """Logits (rows, 1) and the encoded contexts and replies (for the trainer's in-batch term)."""

    logits: torch.Tensor | None = None
    contexts: Encoded | None = None
    replies: Encoded | None = None


def reward_config_fields(
    tokenizer: PreTrainedTokenizerBase, center: float = 0.0, interaction: str = "cosine", quality_head: bool = False
) -> dict[str, float | int | str | bool]:
    """What the model reads from its config besides BERT's own fields."""
    if interaction not in INTERACTIONS:
        raise ValueError(f"unknown interaction {interaction!r}; choose one of {', '.join(INTERACTIONS)}")
    return {
        "reward_interaction": interaction,
        "reward_quality_head": quality_head,
        "reward_scale": DEFAULT_SCALE,
        "reward_center": center,
        "sep_token_id": tokenizer.sep_token_id,
        "cls_token_id": tokenizer.cls_token_id,
        "pad_token_id": tokenizer.pad_token_id or 0,
    }


def encode_pair(tokenizer: PreTrainedTokenizerBase, context: str, reply: str, max_context_tokens: int) -> list[int]:
    """`[CLS] context [SEP] reply [SEP]`: the context cut from the left, the reply from the right."""
    tokenizer.truncation_side = "left"
    context_ids = tokenizer(context, truncation=True, max_length=max_context_tokens)["input_ids"]
    tokenizer.truncation_side = "right"
    reply_ids = tokenizer(reply, truncation=True, max_length=REPLY_MAX_TOKENS)["input_ids"]
    return context_ids + reply_ids[1:]


class PairEncoderRewardModel(BertPreTrainedModel):
    """Scores a reply in its context (see the module docstring); `forward` takes `encode_pair` rows."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.quality = nn.Linear(config.hidden_size, 1)
        self.post_init()

    @classmethod
    def from_encoder(
        cls,
        encoder_path: str,
        tokenizer: PreTrainedTokenizerBase,
        interaction: str = "cosine",
        quality_head: bool = False,
    ) -> PairEncoderRewardModel:
        """A fresh reward model on a sentence encoder's weights (the quality head, if on, starts at zero)."""
        from transformers.utils import logging as hf_logging

        # The quality head is new by design: silence transformers' missing/unexpected-keys report.
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            model = cls.from_pretrained(encoder_path, num_labels=1)
        finally:
            hf_logging.set_verbosity(verbosity)
        model.config.update(reward_config_fields(tokenizer, interaction=interaction, quality_head=quality_head))
        nn.init.zeros_(model.quality.weight)  # start as pure relevance; training moves it
        nn.init.zeros_(model.quality.bias)
        model.quality.requires_grad_(quality_head)
        return model

    @property
    def uses_quality_head(self) -> bool:
        return bool(getattr(self.config, "reward_quality_head", True))  # older folders were trained with it

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Encoded:
        """Token rows through the encoder: unit token vectors and the unit mean-pooled vector."""
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.to(hidden.dtype)
        pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        return Encoded(nn.functional.normalize(hidden, dim=-1), mask, nn.functional.normalize(pooled, dim=-1))

    def split_rows(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Context rows `[CLS] … [SEP]` and reply rows `[CLS] … [SEP]`, each padded, with their masks."""
        contexts, replies = [], []
        for ids, mask in zip(input_ids, attention_mask, strict=True):
            row = ids[mask.bool()]
            seps = (row == self.config.sep_token_id).nonzero().flatten()
            cut = int(seps[0]) + 1 if len(seps) else len(row)
            contexts.append(row[:cut])
            replies.append(torch.cat([row[:1], row[cut:]]) if cut < len(row) else row[:1])
        return (*self.pad_rows(contexts), *self.pad_rows(replies))

    def pad_rows(self, rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token rows of different lengths as one padded id tensor and its attention mask."""
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.config.pad_token_id or 0, dtype=torch.long, device=rows[0].device)
        mask = torch.zeros((len(rows), width), dtype=torch.long, device=rows[0].device)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask

    def relevance(self, contexts: Encoded, replies: Encoded, pairwise: bool = False) -> torch.Tensor:
        """Fit of reply to context, row by row (rows,), or every context against every reply (n, k).

        maxsim: the mean over reply tokens of their best cosine with a context token (late interaction,
        which keeps the names and details a pooled vector blurs); cosine: of the pooled vectors.
        """
        if self.config.reward_interaction == "cosine":
            if pairwise:
                return contexts.pooled @ replies.pooled.T
            return (contexts.pooled * replies.pooled).sum(-1)
        pattern = "krh,nch->nkrc" if pairwise else "nrh,nch->nrc"
        similarity = torch.einsum(pattern, replies.tokens, contexts.tokens)
        context_mask = contexts.mask[:, None, None, :] if pairwise else contexts.mask[:, None, :]
        best = similarity.masked_fill(context_mask == 0, -1.0).max(-1).values
        reply_mask = replies.mask[None] if pairwise else replies.mask
        return (best * reply_mask).sum(-1) / reply_mask.sum(-1).clamp(min=1.0)

    def score(self, contexts: Encoded, replies: Encoded, pairwise: bool = False) -> torch.Tensor:
        """Logits: row by row (rows,), or every context against every reply (n, k) with `pairwise`."""
        quality = self.quality(replies.pooled).squeeze(-1) * float(self.uses_quality_head)
        if pairwise:
            quality = quality[None, :]
        fit = self.relevance(contexts, replies, pairwise)
        return self.config.reward_scale * (fit + quality) - self.config.reward_center

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **_: object
    ) -> PairRewardOutput:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        context_ids, context_mask, reply_ids, reply_mask = self.split_rows(input_ids, attention_mask)
        contexts = self.embed(context_ids, context_mask)
        replies = self.embed(reply_ids, reply_mask)
        logits = self.score(contexts, replies).unsqueeze(-1)
        return PairRewardOutput(logits=logits, contexts=contexts, replies=replies)
