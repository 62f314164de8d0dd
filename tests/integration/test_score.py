"""`escrag score` end to end: a real LanceDB guidance index, real MiniLM, a reward model folder or the registry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flows.cli import EXIT_OK, main
from models.rewards import REWARD_NAMES
from tests.integration.tiny_models import save_tiny_reward_model

RECORDS = [
    {
        "id": "completion",
        "situation": "I lost my job and have not told my wife.",
        "context": [
            {"speaker": "supporter", "text": "Hi, what would you like to talk about?", "strategy": "Question"},
            {"speaker": "seeker", "text": "I lost my job last week and I have not told my wife."},
        ],
        "response": "<think>Exploration: they feel ashamed; an open question fits.</think>\n"
        "That sounds like a heavy thing to carry alone. What makes it hard to tell her?",
    },
    {
        "id": "bare",
        "context": [{"speaker": "seeker", "text": "My dog died yesterday."}],
        "response": "I'm so sorry. Losing a companion hurts.",
        "guidance": ["Reflect the feeling before anything else."],
        "stage": "Comforting",
    },
]


@pytest.fixture(autouse=True)
def _own_tracking_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """mlflow.set_tracking_uri also exports MLFLOW_TRACKING_URI; drop it so each project uses its own store."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> dict[str, Path]:
    from models.embedder import load_embedder
    from models.records import load_records
    from models.retriever import sync_index

    base = tmp_path_factory.mktemp("built")
    passages = load_records(repo_root / "starter_data", "knowledge")[:12]
    sync_index(passages, base / "index", "guidance", load_embedder())
    return {"index": base / "index", "reward_model": save_tiny_reward_model(base / "reward_model")}


def make_project(root: Path, repo_root: Path, built: dict[str, Path], *with_artifacts: str) -> Path:
    root.mkdir()
    (root / "dvc.yaml").write_text("stages: {}\n")
    (root / "params.yaml").write_text((repo_root / "params.yaml").read_text())
    for name in with_artifacts:
        shutil.copytree(built[name], root / "artifacts" / name)
    (root / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return root


def run_score(root: Path, capsys: pytest.CaptureFixture) -> tuple[list[dict], str]:
    assert main(["--project", str(root), "score", "--json", str(root / "in.jsonl")]) == EXIT_OK
    captured = capsys.readouterr()
    return [json.loads(line) for line in captured.out.splitlines()], captured.err


def test_scores_every_reward_with_retrieved_guidance(
    tmp_path: Path, repo_root: Path, built: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    from models.config import load_params

    root = make_project(tmp_path / "p", repo_root, built, "index", "reward_model")
    rows, _ = run_score(root, capsys)
    weights = load_params(root / "params.yaml").grpo.rewards
    assert [r["id"] for r in rows] == ["completion", "bare"]
    for row in rows:
        assert list(row["scores"]) == list(REWARD_NAMES)
        assert all(0.0 <= v <= 1.0 for v in row["scores"].values())
        assert {n: w for n, w in row["weights"].items() if w} == weights
        expected = sum(w * row["scores"][n] for n, w in weights.items()) / sum(weights.values())
        assert row["total"] == pytest.approx(expected, abs=1e-5)
    completion, bare = rows
    assert completion["guidance_source"] == "index" and completion["scores"]["grounding"] > 0
    assert completion["stage"] == "Exploration" and completion["scores"]["format"] == 1.0
    assert bare["guidance_source"] == "record" and bare["stage"] == "Comforting"
    assert bare["response_form"] == "bare_reply" and bare["scores"]["format"] == 0.25


def test_without_index_scores_without_guidance_and_says_so(
    tmp_path: Path, repo_root: Path, built: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    root = make_project(tmp_path / "p", repo_root, built, "reward_model")
    rows, err = run_score(root, capsys)
    assert "no guidance index" in err and "1 record(s)" in err
    assert rows[0]["guidance_source"] == "none" and rows[0]["scores"]["grounding"] == 0.0


def test_falls_back_to_the_registered_reward_model(
    tmp_path: Path, repo_root: Path, built: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    from tasks.project import Project
    from tasks.reward_registry import register_reward_model

    root = make_project(tmp_path / "p", repo_root, built, "index")
    with pytest.raises(FileNotFoundError, match="no reward model"):
        from tasks.reward_registry import scorer_from as load_scorer

        load_scorer(Project(root), None)
    register_reward_model(Project(root), {"heldout_pairwise_accuracy": 0.5}, model_dir=built["reward_model"])
    rows, _ = run_score(root, capsys)
    local = make_project(tmp_path / "q", repo_root, built, "index", "reward_model")
    local_rows, _ = run_score(local, capsys)
    assert [r["scores"]["preference"] for r in rows] == pytest.approx(
        [r["scores"]["preference"] for r in local_rows], abs=1e-5
    )
