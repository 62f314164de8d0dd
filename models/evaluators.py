"""Independent evaluators: small TF-IDF + logistic-regression classifiers that judge a reply.

They decide promotion and never train the policy. They share nothing with the reward functions or the
reward model (those use MiniLM; these learn their own vocabulary from their own data), so a policy cannot
pass the gate by pleasing its own rewards. Each is trained on one data set:

- `strategy`: the support strategy of a supporter reply (ESConv's 8), from the reply alone; trained on
  the supporter turns of the train dialogues.
- `empathy_<mechanism>`: EPITOME's level (0/1/2) of emotional reactions, interpretations and
  explorations, from the seeker's post and the reply; trained on the `ratings` records from EPITOME.
- `risk_ignorance`: does the reply ignore the user's mental-health risk (DiaSafety), from the context
  and the reply; trained on the `ratings` records from DiaSafety.

An evaluator whose data is absent is left out, and `Evaluators.missing` says why.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from models.schema import EMPATHY_METRICS

STRATEGY = "strategy"
RISK_IGNORANCE = "risk_ignorance"
EMPATHY = EMPATHY_METRICS  # one evaluator per EPITOME mechanism, named as the metric it gives
BUNDLE_FILE = "evaluators.pkl"


@dataclass(frozen=True)
class LabelledText:
    """What one evaluator learns from: (context, reply) texts and a label each."""

    contexts: list[str]
    replies: list[str]
    labels: list[Any]

    def __len__(self) -> int:
        return len(self.labels)


class ReplyClassifier:
    """TF-IDF of the reply (word 1-2-grams), optionally beside TF-IDF of the context, into a balanced
    logistic regression. Small and quick on CPU; no encoder weights."""

    def __init__(self, *, use_context: bool, c: float, min_df: int, seed: int) -> None:
        self.use_context = use_context
        self.c, self.min_df, self.seed = c, min_df, seed
        self.pipeline: Any = None

    def _build(self) -> Any:
        from sklearn.compose import ColumnTransformer
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import Pipeline

        def tfidf() -> TfidfVectorizer:
            return TfidfVectorizer(ngram_range=(1, 2), min_df=self.min_df, sublinear_tf=True, strip_accents="unicode")

        columns = [("reply", tfidf(), "reply")] + ([("context", tfidf(), "context")] if self.use_context else [])
        model = LogisticRegression(C=self.c, class_weight="balanced", max_iter=2000, random_state=self.seed)
        return Pipeline([("features", ColumnTransformer(columns)), ("model", model)])

    @staticmethod
    def _frame(contexts: Sequence[str], replies: Sequence[str]) -> Any:
        import pandas as pd

        return pd.DataFrame({"context": list(contexts), "reply": list(replies)})

    def fit(self, data: LabelledText) -> ReplyClassifier:
        if len(set(data.labels)) < 2:
            raise ValueError(f"needs at least two labels to learn, got {sorted(set(data.labels))}")
        self.pipeline = self._build().fit(self._frame(data.contexts, data.replies), data.labels)
        return self

    @property
    def classes(self) -> list[Any]:
        return list(self.pipeline.classes_)

    def predict_proba(self, contexts: Sequence[str], replies: Sequence[str]) -> np.ndarray:
        return self.pipeline.predict_proba(self._frame(contexts, replies))

    def predict(self, contexts: Sequence[str], replies: Sequence[str]) -> list[Any]:
        return list(self.pipeline.predict(self._frame(contexts, replies)))


def classification_scores(truth: Sequence[Any], predicted: Sequence[Any], positive: Any = None) -> dict[str, float]:
    """Accuracy and macro-F1, plus precision and recall of `positive` when given."""
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

    scores = {
        "accuracy": float(accuracy_score(truth, predicted)),
        "macro_f1": float(f1_score(truth, predicted, average="macro", zero_division=0)),
        "n": float(len(truth)),
    }
    if positive is not None:
        scores["precision"] = float(precision_score(truth, predicted, pos_label=positive, zero_division=0))
        scores["recall"] = float(recall_score(truth, predicted, pos_label=positive, zero_division=0))
    return scores


@dataclass
class Evaluators:
    """The trained evaluators, their held-out scores, and the ones left out (name → why)."""

    classifiers: dict[str, ReplyClassifier] = field(default_factory=dict)
    heldout: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def score(self, contexts: Sequence[str], replies: Sequence[str]) -> dict[str, list[Any]]:
        """Per reply: `strategy` (the predicted label), `empathy_<m>` (expected level / 2, in [0, 1]) and
        `risk_ignorance` (P(the reply ignores the risk)), for the evaluators present."""
        out: dict[str, list[Any]] = {}
        for name, clf in self.classifiers.items():
            if name == STRATEGY:
                out[name] = [str(label) for label in clf.predict(contexts, replies)]
                continue
            proba = clf.predict_proba(contexts, replies)
            levels = np.asarray(clf.classes, dtype=float)
            if name == RISK_IGNORANCE:
                out[name] = proba[:, clf.classes.index(1)].tolist()
            else:
                out[name] = (proba @ levels / max(levels.max(), 1.0)).tolist()
        return out

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / BUNDLE_FILE
        with path.open("wb") as handle:
            pickle.dump(self, handle)
        return path

    @classmethod
    def load(cls, folder: Path) -> Evaluators:
        # The bundle is this project's own output (a stage artifact or a registered model), never user input.
        with (folder / BUNDLE_FILE).open("rb") as handle:
            bundle = pickle.load(handle)  # noqa: S301
        if not isinstance(bundle, cls):
            raise TypeError(f"{folder / BUNDLE_FILE}: not an escrag evaluators bundle")
        return bundle
