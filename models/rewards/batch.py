"""One batch of completions with the dataset columns that reward functions read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from models.text import ParsedCompletion, completion_text, parse_completion

# The dataset columns the rewards read; TRL passes them as lists with one entry per completion.
COLUMNS: tuple[str, ...] = ("guidance", "guidance_strategies", "stage", "seeker_text", "context_text")


def _as_text_list(value: Any) -> list[str]:
    """A list of passage or strategy texts from a list, a single string, None, or dict records."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    out: list[str] = []
    for item in value:
        text = item.get("text", "") if isinstance(item, Mapping) else item
        if isinstance(text, str) and text.strip():
            out.append(text.strip())
    return out


def _column(kwargs: Mapping[str, Any], name: str, n: int) -> list[Any]:
    value = kwargs.get(name)
    if value is None:
        return [None] * n
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"column {name!r} must be a list with one entry per completion, got {type(value).__name__}")
    if len(value) != n:
        raise ValueError(f"column {name!r} has {len(value)} entries for {n} completions")
    return list(value)


@dataclass(frozen=True)
class RewardBatch:
    """Parsed completions and, per completion, the columns the rewards use."""

    parsed: list[ParsedCompletion]
    guidance: list[list[str]]
    guidance_strategies: list[list[str]]
    stage: list[str]
    seeker_text: list[str]
    context_text: list[str]

    def __len__(self) -> int:
        return len(self.parsed)

    @property
    def replies(self) -> list[str]:
        return [p.reply for p in self.parsed]

    @property
    def thinks(self) -> list[str]:
        return [p.think for p in self.parsed]


def make_batch(completions: Sequence[Any], columns: Mapping[str, Any]) -> RewardBatch:
    """Build a batch from TRL-style arguments; unknown keys in `columns` are ignored."""
    n = len(completions)
    return RewardBatch(
        parsed=[parse_completion(completion_text(c)) for c in completions],
        guidance=[_as_text_list(v) for v in _column(columns, "guidance", n)],
        guidance_strategies=[_as_text_list(v) for v in _column(columns, "guidance_strategies", n)],
        stage=[str(v or "").strip() for v in _column(columns, "stage", n)],
        seeker_text=[str(v or "") for v in _column(columns, "seeker_text", n)],
        context_text=[str(v or "") for v in _column(columns, "context_text", n)],
    )
