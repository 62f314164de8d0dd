"""Linear probes on sentence embeddings: the learnt half of the safety assessment.

Two logistic-regression probes on MiniLM embeddings: `risk` (seeker text shows risk to self or from
others) and `safe_reply` (a reply to a person at risk is safe). They are fitted by `fit_probes` from the
described categories (models.safety.prototypes), the development cases of evals/crisis and ordinary
ESConv-train seeker turns as negatives, and shipped as a small .npz beside this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROBES_FILE = Path(__file__).with_name("probes.npz")


@dataclass(frozen=True)
class LinearProbe:
    weights: np.ndarray
    bias: float

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        """P(positive) for each row of unit-length embeddings."""
        vectors = np.asarray(vectors)
        if vectors.shape[-1] != self.weights.shape[0]:
            raise ValueError(
                f"the safety probes were fitted on {self.weights.shape[0]}-dimensional embeddings (MiniLM); "
                f"this embedder gives {vectors.shape[-1]}: use the project's embedder or refit (`escrag safety fit`)"
            )
        return 1.0 / (1.0 + np.exp(-(vectors @ self.weights + self.bias)))


def fit_probe(vectors: np.ndarray, labels: Sequence[int], c: float = 1.0) -> LinearProbe:
    """A class-balanced L2 logistic regression (scikit-learn) as a LinearProbe."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit(vectors, np.asarray(labels))
    return LinearProbe(model.coef_[0].astype(np.float32), float(model.intercept_[0]))


def save_probes(probes: dict[str, LinearProbe], path: Path = PROBES_FILE) -> None:
    arrays = {f"{name}.weights": p.weights for name, p in probes.items()}
    arrays |= {f"{name}.bias": np.array([p.bias]) for name, p in probes.items()}
    np.savez(path, **arrays)


def load_probes(path: Path = PROBES_FILE) -> dict[str, LinearProbe]:
    """The shipped probes by name; a clear error when the file is missing."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no safety probes at {path}: run `escrag safety fit`")
    data = np.load(path)
    names = {key.split(".")[0] for key in data.files}
    return {n: LinearProbe(data[f"{n}.weights"], float(data[f"{n}.bias"][0])) for n in sorted(names)}
