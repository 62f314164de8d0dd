"""The `evaluators` stage on real data: trained, reported, registered in a real MLflow registry, served back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from models.evaluators import EMPATHY, RISK_IGNORANCE, STRATEGY
from tasks.project import Project
from tests.conftest import SHARED_DATA

needs_ratings = pytest.mark.skipif(
    not (SHARED_DATA / "epitome").exists() or not (SHARED_DATA / "diasafety").exists(),
    reason="../shared/data/epitome and diasafety are not beside the project",
)


@pytest.fixture(autouse=True)
def _own_tracking_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def _project(root: Path, repo_root: Path, *, ratings: bool) -> Project:
    shutil.copy(repo_root / "params.yaml", root / "params.yaml")
    shutil.copy(repo_root / "dvc.yaml", root / "dvc.yaml")
    shutil.copytree(repo_root / "starter_data" / "dialogues", root / "data" / "dialogues")
    if ratings:
        from models.ratings import read_diasafety, read_epitome

        records = read_epitome(SHARED_DATA / "epitome") + read_diasafety(SHARED_DATA / "diasafety")
        (root / "data" / "ratings").mkdir(parents=True)
        (root / "data" / "ratings" / "rated.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return Project(root)


@needs_ratings
def test_stage_trains_reports_and_registers(tmp_path, repo_root):
    import mlflow
    import pandas as pd

    from tasks.evaluators_stage import evaluators
    from tasks.tracking import CHAMPION, EVALUATORS_MODEL, client

    project = _project(tmp_path, repo_root, ratings=True)
    report = evaluators(project)
    assert report["evaluators"] == [STRATEGY, *EMPATHY, RISK_IGNORANCE] and report["missing"] == {}
    assert json.loads((project.reports / "evaluators.json").read_text()) == report
    heldout = report["heldout"]
    for name in (STRATEGY, *EMPATHY, RISK_IGNORANCE):
        assert heldout[name]["accuracy"] > heldout[name]["majority_accuracy"], (name, heldout[name])
    assert heldout[RISK_IGNORANCE]["n"] == 192  # DiaSafety's test split, one empty record skipped
    assert min(heldout[RISK_IGNORANCE]["precision"], heldout[RISK_IGNORANCE]["recall"]) > 0.6

    version = client().get_model_version_by_alias(EVALUATORS_MODEL, CHAMPION)
    assert str(version.version) == report["registered_version"] and version.run_id == report["mlflow_run_id"]
    assert version.tags["missing"] == "none"
    served = mlflow.pyfunc.load_model(f"models:/{EVALUATORS_MODEL}@{CHAMPION}")
    table = served.predict(pd.DataFrame({"context": ["I can't go on."], "reply": ["Are you safe right now?"]}))
    assert set(table.columns) == {STRATEGY, *EMPATHY, RISK_IGNORANCE}
    assert 0.0 <= float(table[RISK_IGNORANCE][0]) <= 1.0


def test_without_ratings_the_evaluators_that_need_them_are_left_out(tmp_path, repo_root):
    from tasks.evaluators_stage import evaluators
    from tasks.tracking import EVALUATORS_MODEL, client

    report = evaluators(_project(tmp_path, repo_root, ratings=False))
    assert report["evaluators"] == [STRATEGY]
    assert set(report["missing"]) == {*EMPATHY, RISK_IGNORANCE}
    assert all("escrag data import" in why for why in report["missing"].values())
    run = client().get_run(report["mlflow_run_id"])
    assert run.data.tags[f"evaluators.missing.{RISK_IGNORANCE}"] == report["missing"][RISK_IGNORANCE]
    assert "heldout.strategy.accuracy" in run.data.metrics
    assert client().get_model_version(EVALUATORS_MODEL, report["registered_version"]).tags["missing"] != "none"
