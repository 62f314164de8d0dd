"""Probes on sentence embeddings: the learnt half of the safety assessment.

Two probes on MiniLM embeddings: `risk` (seeker text shows risk to self or from others), a one-hidden-layer
network, and `safe_reply` (a reply to a person at risk is safe), a logistic regression. They are fitted by
`fit_probes` from the described categories (models.safety.prototypes), the development cases of evals/crisis
and ordinary ESConv-train seeker turns as negatives, and shipped as a small .npz beside this module.
Version 5 made the risk probe non-linear: in 5-fold CV on 320 development cases it left 17 unsafe replies above
0.5 where the linear one left 27, and judged fewer ordinary ESConv replies as crises (docs/safety.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROBES_FILE = Path(__file__).with_name("probes.npz")
RISK_HIDDEN_UNITS = 64
RISK_L2 = 0.1  # sklearn MLP alpha: CV on the development cases, 1.0 blurs risk into ordinary talk


def _check_width(vectors: np.ndarray, width: int) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape[-1] != width:
        raise ValueError(
            f"the safety probes were fitted on {width}-dimensional embeddings (MiniLM); this embedder gives "
            f"{vectors.shape[-1]}: use the project's embedder or refit (`escrag safety fit`)"
        )
    return vectors


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


@dataclass(frozen=True)
class LinearProbe:
    weights: np.ndarray
    bias: float

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        """P(positive) for each row of unit-length embeddings."""
        return _sigmoid(_check_width(vectors, self.weights.shape[0]) @ self.weights + self.bias)


@dataclass(frozen=True)
class MLPProbe:
    """One ReLU hidden layer, then a logistic output."""

    hidden_weights: np.ndarray  # (embedding width, hidden units)
    hidden_bias: np.ndarray
    weights: np.ndarray  # (hidden units,)
    bias: float

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        vectors = _check_width(vectors, self.hidden_weights.shape[0])
        hidden = np.maximum(vectors @ self.hidden_weights + self.hidden_bias, 0.0)
        return _sigmoid(hidden @ self.weights + self.bias)


Probe = LinearProbe | MLPProbe


def fit_probe(vectors: np.ndarray, labels: Sequence[int], c: float = 1.0) -> LinearProbe:
    """A class-balanced L2 logistic regression (scikit-learn) as a LinearProbe."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit(vectors, np.asarray(labels))
    return LinearProbe(model.coef_[0].astype(np.float32), float(model.intercept_[0]))


def fit_mlp_probe(
    vectors: np.ndarray, labels: Sequence[int], hidden: int = RISK_HIDDEN_UNITS, l2: float = RISK_L2, seed: int = 0
) -> MLPProbe:
    """A scikit-learn MLP with the positives repeated to balance the classes (it has no class weights)."""
    from sklearn.neural_network import MLPClassifier

    vectors, labels = np.asarray(vectors), np.asarray(labels)
    positives, negatives = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    repeat = max(1, len(negatives) // max(1, len(positives)))
    rows = np.concatenate([np.repeat(positives, repeat), negatives])
    model = MLPClassifier((hidden,), alpha=l2, max_iter=300, random_state=seed).fit(vectors[rows], labels[rows])
    (w0, w1), (b0, b1) = model.coefs_, model.intercepts_
    return MLPProbe(w0.astype(np.float32), b0.astype(np.float32), w1[:, 0].astype(np.float32), float(b1[0]))


def save_probes(probes: dict[str, Probe], path: Path = PROBES_FILE) -> None:
    arrays = {}
    for name, probe in probes.items():
        if isinstance(probe, MLPProbe):
            arrays |= {f"{name}.hidden_weights": probe.hidden_weights, f"{name}.hidden_bias": probe.hidden_bias}
        arrays |= {f"{name}.weights": probe.weights, f"{name}.bias": np.array([probe.bias])}
    np.savez(path, **arrays)


def load_probes(path: Path = PROBES_FILE) -> dict[str, Probe]:
    """The shipped probes by name; a clear error when the file is missing."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no safety probes at {path}: run `escrag safety fit`")
    data = np.load(path)
    out: dict[str, Probe] = {}
    for name in sorted({key.split(".")[0] for key in data.files}):
        weights, bias = data[f"{name}.weights"], float(data[f"{name}.bias"][0])
        if f"{name}.hidden_weights" in data.files:
            out[name] = MLPProbe(data[f"{name}.hidden_weights"], data[f"{name}.hidden_bias"], weights, bias)
        else:
            out[name] = LinearProbe(weights, bias)
    return out
