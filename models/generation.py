"""Sampling from a policy: the one `generate` call evaluation and serving share.

Seeded sampling at a moderate temperature, not greedy decoding: greedy decoding of a 135M model loops
("</think>" again and again), and sampling at the evaluation's temperature is what the policy was judged
with. The seed makes a completion repeatable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from models.compute import Compute


@dataclass(frozen=True)
class Sampling:
    """How completions are sampled (params.yaml `evaluate.temperature` / `top_p`)."""

    temperature: float
    top_p: float


class PolicyGenerator:
    """A policy folder loaded once, placed by `compute`, that completes prompts."""

    def __init__(self, model_dir: Path | str, compute: Compute, sampling: Sampling) -> None:
        from models.base_model import load_policy

        self.compute = compute
        self.sampling = sampling
        self.model, self.tokenizer = load_policy(model_dir, compute)
        self.model.eval()

    def complete(self, prompts: Sequence[str], max_new_tokens: int) -> list[str]:
        """The text after each prompt (one batch, left-padded). Seed torch before calling for repeatability."""
        import torch

        tokenizer = self.tokenizer
        enc = tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
        enc = enc.to(self.compute.device)
        with torch.no_grad():
            out = self.model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=True,
                temperature=self.sampling.temperature,
                top_p=self.sampling.top_p,
                pad_token_id=tokenizer.pad_token_id,
            )
        return tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)

    def complete_seeded(self, prompt: str, max_new_tokens: int, seed: int) -> str:
        """One completion, the same every time for the same prompt and seed."""
        import torch

        torch.manual_seed(seed)
        return self.complete([prompt], max_new_tokens)[0]
