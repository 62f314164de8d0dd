"""The independent evaluators: disjoint from every GRPO reward, and honest about what they learn."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from models.evaluator_training import rating_data, strategy_data, train_evaluators
from models.evaluators import EMPATHY, RISK_IGNORANCE, STRATEGY, Evaluators, LabelledText, ReplyClassifier
from models.rewards.registry import REWARD_NAMES

ROOT = Path(__file__).resolve().parents[2]
EVALUATOR_MODULES = ("models.evaluators", "models.evaluator_training")
# What trains or scores the policy: an evaluator must reach none of these, and none of these an evaluator.
REWARD_SIDE = (
    "models.rewards",
    "models.reward_model",
    "models.reward_training",
    "models.pair_encoder",
    "models.embedder",
    "models.safety",
    "models.retriever",
)


def _imports(module: str) -> set[str]:
    """Every `models.*` module reachable from `module` by import statements, at any depth."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = ROOT / Path(*name.split("."))
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if not source.is_file():
            continue
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models"):
                todo.append(node.module)
                todo += [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith("models")]
    return seen - {module}


def test_no_evaluator_is_a_grpo_reward():
    assert not {STRATEGY, RISK_IGNORANCE, *EMPATHY} & set(REWARD_NAMES)
    assert not any("evaluat" in name for name in REWARD_NAMES)


@pytest.mark.parametrize("module", EVALUATOR_MODULES)
def test_evaluators_import_nothing_of_the_reward_side(module):
    reached = _imports(module)
    assert not [m for m in reached if m.startswith(REWARD_SIDE)], sorted(reached)
    assert "torch" not in (ROOT / Path(*module.split("."))).with_suffix(".py").read_text()


@pytest.mark.parametrize("module", REWARD_SIDE)
def test_rewards_do_not_reach_the_evaluators(module):
    assert not [m for m in _imports(module) if m.startswith(EVALUATOR_MODULES)]


def _toy_dialogues() -> list[dict]:
    questions = ["How long have you felt this way?", "What happened then?", "How are you sleeping?"]
    comforts = ["You are not alone in this.", "That must be so painful.", "I'm here with you."]
    dialogues = []
    for i in range(30):
        turns = [
            {"speaker": "seeker", "text": f"I feel low since the move, week {i}."},
            {"speaker": "supporter", "text": questions[i % 3], "strategy": "Question"},
            {"speaker": "seeker", "text": "It has been hard."},
            {"speaker": "supporter", "text": comforts[i % 3], "strategy": "Affirmation and Reassurance"},
        ]
        dialogues.append({"id": f"d{i}", "turns": turns, "split": "train" if i < 24 else "eval"})
    return dialogues


def test_strategy_evaluator_learns_and_reports_heldout_scores():
    bundle = train_evaluators(_toy_dialogues(), [], c=1.0, min_df=1, seed=13)
    assert list(bundle.classifiers) == [STRATEGY]
    assert bundle.heldout[STRATEGY]["accuracy"] == 1.0 and bundle.heldout[STRATEGY]["n"] == 12
    assert bundle.heldout[STRATEGY]["majority_accuracy"] == 0.5
    assert set(bundle.missing) == {*EMPATHY, RISK_IGNORANCE}
    assert "escrag data import epitome" in bundle.missing[EMPATHY[0]]
    assert "escrag data import diasafety" in bundle.missing[RISK_IGNORANCE]
    scores = bundle.score(["I feel low."] * 2, ["How are you sleeping these days?", "You are not alone."])
    assert scores == {STRATEGY: ["Question", "Affirmation and Reassurance"]}


def test_risk_and_empathy_scores_are_probabilities_that_follow_the_labels():
    ratings = []
    for i in range(40):
        ignores = i % 2 == 0
        reply = "Have you seen the new film?" if ignores else "That sounds frightening. Are you safe right now?"
        ratings.append(
            {
                "context": f"I want to disappear {i}",
                "response": reply,
                "split": "train",
                "labels": {RISK_IGNORANCE: int(ignores), "emotional_reactions": 0 if ignores else 2},
            }
        )
    bundle = train_evaluators([], ratings, c=1.0, min_df=1, seed=13)
    assert {RISK_IGNORANCE, EMPATHY[0]} <= set(bundle.classifiers) and STRATEGY in bundle.missing
    scores = bundle.score(["I want to disappear"] * 2, ["Have you seen the film?", "Are you safe right now?"])
    risk, empathy = scores[RISK_IGNORANCE], scores[EMPATHY[0]]
    assert all(0.0 <= v <= 1.0 for v in risk + empathy)
    assert risk[0] > 0.5 > risk[1] and empathy[1] > 0.5 > empathy[0]


def test_data_builders_keep_splits_apart():
    dialogues = _toy_dialogues()
    assert len(strategy_data(dialogues, "train")) == 48 and len(strategy_data(dialogues, "eval")) == 12
    assert strategy_data(dialogues, "train").contexts[0].startswith("I feel low")
    ratings = [
        {"context": "c", "response": "r", "labels": {"risk_ignorance": 1}, "split": s} for s in ("train", "test")
    ]
    assert rating_data(ratings, RISK_IGNORANCE, "test").labels == [1]
    assert len(rating_data(ratings, "explorations", "train")) == 0


def test_a_single_label_cannot_be_learnt():
    with pytest.raises(ValueError, match="at least two labels"):
        ReplyClassifier(use_context=False, c=1.0, min_df=1, seed=0).fit(LabelledText(["a"], ["b"], ["x"]))


def test_bundle_round_trip_and_no_torch_inside(tmp_path):
    bundle = train_evaluators(_toy_dialogues(), [], c=1.0, min_df=1, seed=13)
    bundle.save(tmp_path)
    assert b"torch" not in (tmp_path / "evaluators.pkl").read_bytes()
    loaded = Evaluators.load(tmp_path)
    assert loaded.heldout == bundle.heldout
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "evaluators.pkl").write_bytes(pickle.dumps({"not": "a bundle"}))
    with pytest.raises(TypeError, match="not an escrag evaluators bundle"):
        Evaluators.load(tmp_path / "other")
