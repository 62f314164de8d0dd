"""The reward model goes into a real MLflow registry (SQLite in a temp project) and comes back by alias."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tasks.project import Project
from tests.integration.tiny_models import save_tiny_reward_model

CONTEXTS = ["Seeker: I lost my job today.", "Seeker: My dog died and the house is empty."]
REPLIES = ["I'm so sorry, that sounds like a shock. How are you holding up?", "Just get over it."]


@pytest.fixture(scope="module")
def tiny_reward_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_reward_model(tmp_path_factory.mktemp("reward_model"), layers=2)


@pytest.fixture(autouse=True)
def _own_tracking_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """mlflow.set_tracking_uri also exports MLFLOW_TRACKING_URI; drop it so each project uses its own store."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture()
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_register_sets_alias_tags_and_model_metric(project: Project, tiny_reward_model: Path) -> None:
    from mlflow import MlflowClient

    from tasks.reward_registry import register_reward_model
    from tasks.tracking import CHAMPION, REWARD_MODEL

    registered = register_reward_model(project, {"heldout_pairwise_accuracy": 0.8}, model_dir=tiny_reward_model)
    client = MlflowClient()
    version = client.get_model_version_by_alias(REWARD_MODEL, CHAMPION)
    assert str(version.version) == registered.version == "1"
    assert version.run_id == registered.run_id
    assert version.tags["heldout_pairwise_accuracy"] == "0.8000"
    assert version.tags["max_length"] == "64"
    logged = client.get_logged_model(version.source.removeprefix("models:/"))
    assert math.isclose(next(m.value for m in logged.metrics if m.key == "heldout_pairwise_accuracy"), 0.8)

    again = register_reward_model(project, {}, model_dir=tiny_reward_model, run_id=registered.run_id)
    assert again.reused and again.version == registered.version
    assert again.heldout_pairwise_accuracy == pytest.approx(0.75)  # from reward_model.json


def test_scorer_from_alias_matches_the_folder(project: Project, tiny_reward_model: Path) -> None:
    from models.reward_model import RewardModelScorer
    from tasks.reward_registry import REWARD_URI, load_reward_scorer, register_reward_model

    register_reward_model(project, {"heldout_pairwise_accuracy": 0.8}, model_dir=tiny_reward_model)
    from_registry = load_reward_scorer(REWARD_URI, project)
    from_folder = RewardModelScorer(tiny_reward_model)
    assert from_registry.max_length == from_folder.max_length == 64
    expected = from_folder.score(CONTEXTS, REPLIES)
    assert from_registry.score(CONTEXTS, REPLIES) == pytest.approx(expected, abs=1e-5)


def test_served_pyfunc_scores_a_context_reply_table(project: Project, tiny_reward_model: Path) -> None:
    """What `mlflow models serve` runs: the registered pyfunc on a DataFrame of context and reply."""
    import mlflow
    import pandas as pd

    from models.reward_model import RewardModelScorer
    from tasks.reward_registry import REWARD_URI, register_reward_model

    register_reward_model(project, {"heldout_pairwise_accuracy": 0.8}, model_dir=tiny_reward_model)
    served = mlflow.pyfunc.load_model(REWARD_URI)
    scores = served.predict(pd.DataFrame({"context": CONTEXTS, "reply": REPLIES}))
    assert list(scores) == pytest.approx(RewardModelScorer(tiny_reward_model).score(CONTEXTS, REPLIES), abs=1e-5)
    with pytest.raises(Exception, match="reply"):
        served.predict(pd.DataFrame({"context": CONTEXTS}))


def test_missing_folder_is_a_clear_error(project: Project, tmp_path: Path) -> None:
    from tasks.reward_registry import register_reward_model

    with pytest.raises(FileNotFoundError, match="config.json missing"):
        register_reward_model(project, {}, model_dir=tmp_path / "nothing")
