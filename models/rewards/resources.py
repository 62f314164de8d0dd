"""Shared, lazily loaded things the reward functions need: the sentence encoder and the preference scorer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from models.compute import Compute
    from models.safety import SafetyAssessor

# Passage embeddings kept per text; the cache is emptied when it grows past this many entries.
MAX_CACHED_PASSAGES = 50_000


class Embedder(Protocol):
    """Anything that embeds texts like a SentenceTransformer."""

    def encode(self, sentences: list[str], **kwargs: Any) -> Any: ...


class PreferenceScorer(Protocol):
    """Anything that scores replies in context, higher is better (raw, unbounded scores)."""

    def score(self, contexts: list[str], replies: list[str]) -> list[float]: ...


class MissingResourceError(RuntimeError):
    """A reward needs a resource that was not given (for example 'preference' without a scorer)."""


class RewardResources:
    """Holds what the rewards share: an embedder (loaded on first use) and an optional preference scorer.

    `embedder`: any object with `.encode(list[str], normalize_embeddings=True) -> np.ndarray`; by default
    MiniLM (or `embedder_path`) is loaded the first time a reward needs it, placed by `compute` (the
    policy's device, so the rewards of a GRPO step are encoded beside it, in device-sized batches).
    `preference_scorer`: an object with `score(contexts, replies) -> list[float]`, needed only by the
    'preference' reward. The preference score is squashed as `sigmoid((raw - preference_offset) / preference_scale)`.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        preference_scorer: PreferenceScorer | None = None,
        *,
        embedder_path: str | None = None,
        compute: Compute | None = None,
        preference_offset: float = 0.0,
        preference_scale: float = 1.0,
        safety_assessor: SafetyAssessor | None = None,
    ) -> None:
        if preference_scale <= 0:
            raise ValueError(f"preference_scale must be > 0, got {preference_scale}")
        self._embedder = embedder
        self._embedder_path = embedder_path
        self._compute = compute
        self.preference_scorer = preference_scorer
        self.preference_offset = float(preference_offset)
        self.preference_scale = float(preference_scale)
        self._passage_cache: dict[str, np.ndarray] = {}
        self._safety_assessor = safety_assessor

    @property
    def embedder(self) -> Embedder:
        """The sentence encoder, loaded on first access."""
        if self._embedder is None:
            from models.embedder import load_embedder

            self._embedder = load_embedder(self._compute, self._embedder_path)
        return self._embedder

    @property
    def safety_assessor(self) -> SafetyAssessor:
        """The safety assessment, reading meaning with this embedder (built on first access)."""
        if self._safety_assessor is None:
            from models.safety import SafetyAssessor

            self._safety_assessor = SafetyAssessor(self.embed)
        return self._safety_assessor

    def require_scorer(self) -> PreferenceScorer:
        """The preference scorer, or a clear error when none was given."""
        if self.preference_scorer is None:
            raise MissingResourceError(
                "the 'preference' reward needs a preference scorer: pass "
                "RewardResources(preference_scorer=RewardModelScorer(model_dir)) or drop 'preference' from the weights"
            )
        return self.preference_scorer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings of `texts`, one row each (no caching)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        sized = {"batch_size": self._compute.encode_batch_size} if self._compute else {}
        # no progress bar: these are small batches, and in `escrag chat` a bar overwrites the prompt
        vectors = self.embedder.encode(list(texts), normalize_embeddings=True, show_progress_bar=False, **sized)
        vectors = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def embed_passages(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Embeddings of passages by text, encoding only those not seen before."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._passage_cache))
        if missing:
            if len(self._passage_cache) + len(missing) > MAX_CACHED_PASSAGES:
                self._passage_cache.clear()
            for text, vector in zip(missing, self.embed(missing), strict=True):
                self._passage_cache[text] = vector
        return {t: self._passage_cache[t] for t in texts}

    @property
    def cached_passages(self) -> int:
        """How many passage embeddings are cached."""
        return len(self._passage_cache)
