"""`escrag score`: record validation (exit 2 naming file, line, id and field), weights, bare replies, totals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from flows.cli import EXIT_BAD_INPUT, main
from flows.score import ScoreInput, parse_weights, read_inputs, render_row, score_items
from models.rewards import REWARD_NAMES, RewardResources
from models.safety import SafetyAssessor
from models.safety.probes import LinearProbe

CONTEXT = [
    {"speaker": "supporter", "text": "Hi, what would you like to talk about?", "strategy": "Question"},
    {"speaker": "seeker", "text": "I lost my job and I feel ashamed."},
]
GOOD = "<think>They feel ashamed; a question fits the Exploration stage.</think>\nThat sounds so hard. What happened?"


def write(tmp_path: Path, *records: dict | str) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


@pytest.fixture()
def project(tmp_path: Path, repo_root: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "dvc.yaml").write_text("stages: {}\n")
    (root / "params.yaml").write_text((repo_root / "params.yaml").read_text())
    return root


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"id": "r1", "response": GOOD}, "context"),
        ({"id": "r1", "context": [], "response": GOOD}, "context"),
        ({"id": "r1", "context": [{"speaker": "bot", "text": "hi"}], "response": GOOD}, "context[0].speaker"),
        ({"id": "r1", "context": [{"speaker": "seeker", "text": " "}], "response": GOOD}, "context[0].text"),
        ({"id": "r1", "context": CONTEXT}, "response"),
        ({"id": "r1", "context": CONTEXT, "response": 3}, "response"),
        ({"id": "r1", "context": CONTEXT, "response": GOOD, "guidance": "text"}, "guidance"),
        ({"id": "r1", "context": CONTEXT, "response": GOOD, "guidance": ["ok", ""]}, "guidance[1]"),
        ({"id": "r1", "context": CONTEXT, "response": GOOD, "stage": "Later"}, "stage"),
        ({"id": "r1", "context": CONTEXT, "response": GOOD, "position": 2}, "position"),
    ],
)
def test_bad_record_exits_2_naming_file_line_id_and_field(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture, record: dict, field: str
) -> None:
    ok = {"id": "r0", "context": CONTEXT, "response": GOOD, "guidance": []}
    path = write(tmp_path, ok, record)
    assert main(["--project", str(project), "score", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and "record 'r1'" in err and f"field {field!r}" in err


def test_malformed_json_and_missing_file_exit_2(tmp_path: Path, project: Path, capsys: pytest.CaptureFixture) -> None:
    path = write(tmp_path, "{not json")
    assert main(["--project", str(project), "score", str(path)]) == EXIT_BAD_INPUT
    assert f"{path}:1:" in capsys.readouterr().err
    assert main(["--project", str(project), "score", str(tmp_path / "absent.jsonl")]) == EXIT_BAD_INPUT
    assert "absent.jsonl" in capsys.readouterr().err


def test_bad_weights_exit_2(tmp_path: Path, project: Path, capsys: pytest.CaptureFixture) -> None:
    path = write(tmp_path, {"context": CONTEXT, "response": GOOD})
    assert main(["--project", str(project), "score", str(path), "--weights", "kindness=1"]) == EXIT_BAD_INPUT
    assert "kindness" in capsys.readouterr().err


def test_weights_name_every_reward_with_zero_for_unnamed() -> None:
    weights = parse_weights(None, {"format": 1.0, "safety": 2.0})
    assert list(weights) == list(REWARD_NAMES)
    assert weights["format"] == 1.0 and weights["safety"] == 2.0 and weights["grounding"] == 0.0
    assert parse_weights("preference=0.5, format=1", {"format": 9.0})["format"] == 1.0
    with pytest.raises(ValueError, match="NAME=NUMBER"):
        parse_weights("format=high", {})


def test_stage_by_position_unless_given(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"context": CONTEXT, "response": GOOD},
        {"context": CONTEXT, "response": GOOD, "position": 0.9},
        {"context": CONTEXT, "response": GOOD, "stage": "Comforting", "position": 0.9},
    )
    assert [item.stage for item in read_inputs(path)] == ["Exploration", "Action", "Comforting"]


class FakeEmbedder:
    def encode(self, sentences: list[str], **kwargs) -> np.ndarray:
        return np.array([[1.0, float(len(s) % 7)] for s in sentences])


class FakeScorer:
    def score(self, contexts: list[str], replies: list[str]) -> list[float]:
        return [1.0 if "?" in r else -1.0 for r in replies]


def test_bare_reply_is_scored_as_reply_with_format_as_is() -> None:
    reply = "That sounds so hard. What happened?"
    items = [ScoreInput(1, "full", CONTEXT, GOOD, guidance=[]), ScoreInput(2, "bare", CONTEXT, reply, guidance=[])]
    weights = parse_weights("format=1,preference=1", {})
    zero = LinearProbe(np.zeros(2, dtype=np.float32), 0.0)  # safety probes of the fake embedder's width
    assessor = SafetyAssessor(
        lambda texts: FakeEmbedder().encode(list(texts)), probes={"risk": zero, "safe_reply": zero}
    )
    full, bare = score_items(items, weights, RewardResources(FakeEmbedder(), FakeScorer(), safety_assessor=assessor))
    assert set(full["scores"]) == set(REWARD_NAMES)
    assert bare["response_form"] == "bare_reply" and full["response_form"] == "completion"
    assert full["scores"]["format"] == 1.0 and bare["scores"]["format"] == 0.25
    assert bare["scores"]["preference"] == full["scores"]["preference"] > 0.7  # the reply itself was judged
    assert bare["total"] == pytest.approx((0.25 + bare["scores"]["preference"]) / 2, abs=1e-5)
    assert render_row(bare, as_json=False).startswith("bare\ttotal ")
    assert json.loads(render_row(full, as_json=True))["id"] == "full"
