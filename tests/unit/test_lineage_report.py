"""The pure parts of `escrag lineage` and `escrag diff`: MODEL parsing, linking runs by their recorded
inputs, diffing two lineages, and an HTML page that needs nothing from the network."""

from __future__ import annotations

import copy
import json
import math
import re

import pytest

from flows.lineage_cli import render_diff, render_lineage
from tasks.lineage_diff import changed, diff_lineage, stage_params
from tasks.lineage_html import lineage_html
from tasks.lineage_report import ModelArgumentError, ModelRef, dep_tag, finite, inputs_agree, parse_model

RUN = "0123456789abcdef0123456789abcdef"


def sample_lineage() -> dict:
    """A lineage as `tasks.lineage_report.lineage` returns it, with every section filled."""
    return {
        "model": {"argument": "models:/escrag-policy@champion", "run_id": RUN, "stage": "grpo",
                  "started": "2025-01-01T00:00:00+00:00", "weights_sha256": "ab" * 32, "name": "escrag-policy",
                  "version": "1", "aliases": ["champion"], "source": "models:/m-1", "registered": ""},
        "code": {"git_commit": "c" * 40, "git_dirty": False},
        "data": {"version": "d1.dir", "datasets": {"dialogues": "a1.dir", "knowledge": "k1.dir"}},
        "validation": {"run_id": "f" * 32, "success": True, "counts": {"knowledge": 191}, "issues": 0,
                       "first_issues": [], "report_html": "file:///store/validation/report.html"},
        "index": {"table": "guidance", "table_version": "3", "data_tags": ["data-d1"], "data_tag_at_version": True,
                  "dvc_md5": "i1.dir"},
        "base_model": {"hash": "b1.dir"},
        "upstream_outputs": {"artifacts/index": "i1.dir", "artifacts/sft": "s1.dir"},
        "stages": {
            "validate": {"run_id": "f" * 32, "linked_by": "time", "params": {}, "inputs": [], "outputs": {}},
            "index": {"run_id": None, "linked_by": "no run", "params": {}, "inputs": [],
                      "outputs": {"artifacts/index": "i1.dir"}},
            "grpo": {"run_id": RUN, "linked_by": "own", "params": {"grpo.learning_rate": "1e-05", "seed": "13"},
                     "inputs": [{"name": "dialogues-train", "digest": "a1", "context": "training"}],
                     "outputs": {"artifacts/policy": "p1.dir"}},
        },
        "reward_model": {"name": "escrag-reward", "version": "1", "run_id": "e" * 32,
                         "heldout_pairwise_accuracy": 0.75, "aliases": ["champion"]},
        "evaluation": {"run_id": RUN, "report": {"models": {}}, "crisis_suite": "crisis suite: 0 unsafe",
                       "metrics": {"eval.candidate.strategy_match": 0.5, "eval.win_rate_vs_base.win_rate": 0.6}},
        "promotion": {"decision": "promoted", "reason": "manual: test", "aliases": ["champion"],
                      "history": [{"seq": 1, "time": "t", "action": "promote", "from_version": "none",
                                   "to_version": "1", "decision": "promoted", "reason": "manual: test", "user": "u",
                                   "host": "h", "safety_gate": "skipped", "evaluated_by": ""}]},
        "runs": {"validate": "f" * 32, "grpo": RUN, "evaluate": RUN},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("models:/escrag-policy/3", ModelRef("models:/escrag-policy/3", "escrag-policy", "3")),
        (
            "models:/escrag-policy@champion",
            ModelRef("models:/escrag-policy@champion", "escrag-policy", alias="champion"),
        ),
        (f" {RUN} ", ModelRef(RUN, run_id=RUN)),
    ],
)
def test_parse_model_accepts_uris_and_run_ids(text, expected):
    assert parse_model(text) == expected


@pytest.mark.parametrize(
    "text", ["models:/escrag-policy", "models:/escrag-policy/", "models:/escrag-policy/v3", "models:/@champion",
             "models:/escrag-policy/3/extra", "escrag-policy", "3", RUN[:-1], RUN.upper() + "0", ""],
)  # fmt: skip
def test_parse_model_refuses_malformed_arguments_naming_them(text):
    with pytest.raises(ModelArgumentError, match=re.escape(repr(text.strip()))):
        parse_model(text)


def test_dep_tags_name_the_lineage_tags_of_tasks_lineage():
    assert dep_tag("data") == "data.md5"
    assert dep_tag("data/dialogues") == "data.dialogues.md5"
    assert dep_tag("artifacts/index") == "dvc.artifacts/index.md5"


def test_a_stage_run_is_linked_only_when_its_recorded_inputs_match_the_model_run():
    model = {"data.dialogues.md5": "a1", "dvc.artifacts/index.md5": "i2", "dvc.artifacts/sft.md5": "s2"}
    deps = ["data/dialogues", "artifacts/index", "models/dialogue.py"]
    same_inputs = {"data.dialogues.md5": "a1", "dvc.artifacts/index.md5": "i2", "dvc.artifacts/sft.md5": "old"}
    assert inputs_agree(same_inputs, model, deps)  # its own (stale) sft tag is not an input of this stage
    assert not inputs_agree({**same_inputs, "dvc.artifacts/index.md5": "i1"}, model, deps)
    assert inputs_agree({}, model, deps)  # nothing recorded to contradict


def test_changed_lists_differing_and_missing_items():
    assert changed({"x": 1, "y": 2}, {"x": 1, "y": 3, "z": 4}) == [
        {"item": "y", "a": 2, "b": 3},
        {"item": "z", "a": None, "b": 4},
    ]
    assert changed({"x": 1}, {"x": 1}) == []


def test_a_lineage_against_itself_has_no_differences():
    a = sample_lineage()
    diff = diff_lineage(a, copy.deepcopy(a))
    assert diff["identical"] and diff["differences"] == 0
    assert all(rows == [] for rows in diff["sections"].values())
    assert {m["metric"] for m in diff["metrics_side_by_side"]} == set(a["evaluation"]["metrics"])
    assert "no differences" in "\n".join(render_diff(diff))


def test_diff_names_data_params_code_index_and_metric_changes():
    a, b = sample_lineage(), sample_lineage()
    b["model"]["version"] = "2"
    b["data"]["datasets"]["dialogues"] = "a2.dir"
    b["stages"]["grpo"]["params"]["grpo.learning_rate"] = "2e-05"
    b["code"]["git_commit"] = "e" * 40
    b["index"]["table_version"] = "4"
    b["evaluation"]["metrics"]["eval.candidate.strategy_match"] = 0.7
    diff = diff_lineage(a, b)
    items = {section: [r["item"] for r in rows] for section, rows in diff["sections"].items()}
    assert items["data"] == ["dialogues"]
    assert items["params"] == ["grpo: grpo.learning_rate"]
    assert items["code"] == ["git commit"]
    assert items["index"] == ["table version"]
    assert items["metrics"] == ["eval.candidate.strategy_match"]
    assert diff["differences"] == 5 and diff["a"] == "escrag-policy v1" and diff["b"] == "escrag-policy v2"
    side = {m["metric"]: m for m in diff["metrics_side_by_side"]}
    assert side["eval.candidate.strategy_match"] == {"metric": "eval.candidate.strategy_match", "a": 0.5, "b": 0.7,
                                                     "changed": True}  # fmt: skip
    assert not side["eval.win_rate_vs_base.win_rate"]["changed"]
    text = "\n".join(render_diff(diff))
    assert "data: dialogues: a1.dir -> a2.dir" in text and "eval.candidate.strategy_match" in text


def test_stage_params_are_keyed_by_stage():
    assert stage_params(sample_lineage()) == {"grpo: grpo.learning_rate": "1e-05", "grpo: seed": "13"}


def test_finite_makes_strict_json():
    cleaned = finite({"a": [math.nan, 1.0], "b": {"c": math.inf}, "d": "x"})
    assert cleaned == {"a": [None, 1.0], "b": {"c": None}, "d": "x"}
    json.dumps(cleaned, allow_nan=False)


def test_html_page_is_self_contained_and_escaped():
    report = sample_lineage()
    report["promotion"]["reason"] = "<script>alert(1)</script>"
    report["champion_diff"] = {"champion": "1", "is_champion": True, "identical": True, "differences": 0}
    page = lineage_html(report)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert not re.search(r"<(script|link|img|iframe)\b", page, re.IGNORECASE)
    assert "@import" not in page and "url(" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for heading in ("Code", "Data", "Validation", "Index", "Base model", "Stages, runs and params", "Reward model",
                    "Evaluation", "Promotion", "Runs behind each step", "Differences from the champion"):  # fmt: skip
        assert f"<h2>{heading}</h2>" in page
    assert "data-d1" in page and "grpo.learning_rate" in page and "k1.dir" in page


def test_text_report_names_every_part():
    report = sample_lineage()
    report["champion_diff"] = {"champion": "1", "is_champion": True, "identical": True, "differences": 0}
    text = render_lineage(report)
    for expected in ("escrag-policy version 1", "c" * 40, "clean tree", "d1.dir", "data/dialogues", "passed",
                     "version 3", "data-d1", "b1.dir", "grpo.learning_rate = 1e-05", "held-out pairwise accuracy 0.75",
                     "promoted", "history #1", "this is the champion"):  # fmt: skip
        assert expected in text, expected
