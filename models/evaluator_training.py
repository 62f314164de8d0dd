"""Training data and training of the independent evaluators (models/evaluators.py), with held-out scores.

Held-out sides: `strategy` is scored on the supporter turns of the eval dialogues; the EPITOME and
DiaSafety evaluators on their `test` split (their `eval` split is left for anyone who tunes them, so that
`test` stays blind). Nothing here is tuned: the settings are `params.yaml` `evaluators`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from models.evaluators import (
    EMPATHY,
    RISK_IGNORANCE,
    STRATEGY,
    Evaluators,
    LabelledText,
    ReplyClassifier,
    classification_scores,
)
from models.schema import EPITOME_MECHANISMS

logger = logging.getLogger(__name__)

MIN_EXAMPLES = 20  # below this an evaluator would learn nothing worth reporting


def strategy_data(dialogues: Sequence[dict[str, Any]], split: str) -> LabelledText:
    """Supporter turns with a strategy label: (the seeker turn before it, the reply, the strategy)."""
    contexts, replies, labels = [], [], []
    for dialogue in dialogues:
        if dialogue.get("split") != split:
            continue
        last_seeker = ""
        for turn in dialogue.get("turns", []):
            if turn["speaker"] == "seeker":
                last_seeker = turn["text"]
            elif turn.get("strategy"):
                contexts.append(last_seeker)
                replies.append(turn["text"])
                labels.append(turn["strategy"])
    return LabelledText(contexts, replies, labels)


def rating_data(ratings: Sequence[dict[str, Any]], label: str, split: str) -> LabelledText:
    """Ratings that carry `label`, in one split: (context, response, level)."""
    rows = [r for r in ratings if r.get("split") == split and label in r.get("labels", {})]
    return LabelledText([r["context"] for r in rows], [r["response"] for r in rows], [r["labels"][label] for r in rows])


def _specs(dialogues: Sequence[dict[str, Any]], ratings: Sequence[dict[str, Any]]) -> dict[str, tuple]:
    """name → (train data, held-out data, uses context, positive label, what is missing when empty)."""
    specs = {
        STRATEGY: (
            strategy_data(dialogues, "train"),
            strategy_data(dialogues, "eval"),
            False,
            None,
            "no strategy-labelled supporter turns in the dialogues",
        )
    }
    for name, mechanism in zip(EMPATHY, EPITOME_MECHANISMS, strict=True):
        specs[name] = (
            rating_data(ratings, mechanism, "train"),
            rating_data(ratings, mechanism, "test"),
            True,
            None,
            "no EPITOME ratings: run `escrag data import epitome PATH`",
        )
    specs[RISK_IGNORANCE] = (
        rating_data(ratings, RISK_IGNORANCE, "train"),
        rating_data(ratings, RISK_IGNORANCE, "test"),
        True,
        1,
        "no DiaSafety ratings: run `escrag data import diasafety PATH`",
    )
    return specs


def train_evaluators(
    dialogues: Sequence[dict[str, Any]], ratings: Sequence[dict[str, Any]], *, c: float, min_df: int, seed: int
) -> Evaluators:
    """Every evaluator whose data is there, with its held-out scores; the others listed as missing."""
    bundle = Evaluators()
    for name, (train, heldout, use_context, positive, why) in _specs(dialogues, ratings).items():
        if len(train) < MIN_EXAMPLES or len(set(train.labels)) < 2:
            bundle.missing[name] = f"{why} ({len(train)} training examples)"
            logger.warning("evaluator %s left out: %s", name, bundle.missing[name])
            continue
        clf = ReplyClassifier(use_context=use_context, c=c, min_df=min_df, seed=seed).fit(train)
        bundle.classifiers[name] = clf
        scores = {"n_train": float(len(train))}
        if len(heldout):
            predicted = clf.predict(heldout.contexts, heldout.replies)
            scores |= classification_scores(heldout.labels, predicted, positive)
            scores |= {"majority_accuracy": _majority_accuracy(train.labels, heldout.labels)}
        bundle.heldout[name] = scores
        logger.info("evaluator %s: %s", name, {k: round(v, 3) for k, v in scores.items()})
    return bundle


def _majority_accuracy(train: Sequence[Any], heldout: Sequence[Any]) -> float:
    """Accuracy of always answering the most common training label: the floor an evaluator must clear."""
    majority = max(set(train), key=list(train).count)
    return sum(label == majority for label in heldout) / len(heldout)
