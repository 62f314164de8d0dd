"""The semantic half of the safety assessment: sentence similarity to described categories (prototypes)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Texts in, unit-length embeddings out (one row per text), e.g. RewardResources.embed.
Embed = Callable[[Sequence[str]], np.ndarray]

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
MIN_SENTENCE_WORDS = 3  # "Okay." or "Hmm?" say nothing a category could match


def sentences(text: str) -> list[str]:
    """The sentences of a text worth comparing (at least MIN_SENTENCE_WORDS words); the whole text if none."""
    found = [s.strip() for s in _SENTENCE.findall(text or "") if len(s.split()) >= MIN_SENTENCE_WORDS]
    stripped = (text or "").strip()
    return found or ([stripped] if stripped else [])


@dataclass(frozen=True)
class PrototypeBank:
    """Embedded prototype sentences, each row labelled with its category."""

    labels: tuple[str, ...]
    vectors: np.ndarray

    @classmethod
    def build(cls, groups: Mapping[str, Sequence[str]], embed: Embed) -> PrototypeBank:
        labels = tuple(label for label, texts in groups.items() for _ in texts)
        texts = [text for group in groups.values() for text in group]
        return cls(labels, np.asarray(embed(texts), dtype=np.float32))

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.labels))

    def similarities(self, vectors: np.ndarray) -> np.ndarray:
        """(n sentences, n categories): each sentence's best cosine within each category."""
        if len(vectors) == 0:
            return np.zeros((0, len(self.categories)), dtype=np.float32)
        sims = vectors @ self.vectors.T
        columns = [sims[:, [i for i, lab in enumerate(self.labels) if lab == c]].max(axis=1) for c in self.categories]
        return np.stack(columns, axis=1)

    def best(self, vectors: np.ndarray) -> dict[str, float]:
        """Each category's best cosine over all `vectors` (0.0 when there are none)."""
        sims = self.similarities(vectors)
        if len(sims) == 0:
            return dict.fromkeys(self.categories, 0.0)
        return {c: float(v) for c, v in zip(self.categories, sims.max(axis=0), strict=True)}


def top(scores: Mapping[str, float]) -> tuple[str, float]:
    """The category with the highest score, and that score."""
    label = max(scores, key=scores.__getitem__)
    return label, scores[label]
