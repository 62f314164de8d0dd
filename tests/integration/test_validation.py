"""validate_data against real Great Expectations: a valid dataset passes, each defect is located exactly."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tasks.validation import PHONE_RE, ValidationReport, redact_pii, validate_data

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

Files = dict[str, list[dict[str, Any]]]


def _turn(speaker: str, text: str, strategy: str | None = None) -> dict[str, str]:
    return {"speaker": speaker, "text": text} | ({"strategy": strategy} if strategy else {})


def _valid() -> Files:
    kn = [
        ("kn-1", "Question", "Exploration", "Ask open questions to learn what the seeker is going through."),
        ("kn-2", "Reflection of feelings", "Comforting", "Name the feeling you hear so the seeker feels heard."),
        ("kn-3", "Information", "any", "If someone is in danger, call 988 or a local crisis line."),
        ("kn-4", "Affirmation and Reassurance", "any", "Acknowledge the effort the seeker has made."),
        ("kn-5", "Providing Suggestions", "Action", "Offer one small, concrete next step."),
    ]
    knowledge = [
        {"id": i, "text": t, "strategy": s, "stage": g, "title": f"Guide {i}", "source": "handbook"}
        for i, s, g, t in kn
    ]
    dialogue = [
        _turn("seeker", "I lost my job last week and I can't sleep."),
        _turn("supporter", "That sounds really hard. How are you coping?", "Question"),
        _turn("seeker", "Not well. I could call 988 if it gets worse."),
    ]
    return json.loads(
        json.dumps(
            {  # a fresh copy: no record shares a turn with another
                "knowledge/a.jsonl": knowledge[:3],
                "knowledge/b.jsonl": knowledge[3:],
                "dialogues/train.jsonl": [
                    {
                        "id": "dl-1",
                        "situation": "Lost my job.",
                        "turns": dialogue,
                        "split": "train",
                        "emotion": "sadness",
                        "problem": "job crisis",
                        "conversation_id": "conv-1",
                        "survey": {"empathy": 5, "relevance": 4},
                    },
                    {"id": "dl-2", "situation": "Exam stress.", "turns": dialogue[:2], "split": "train"},
                ],
                "dialogues/eval.jsonl": [
                    {
                        "id": "dl-3",
                        "situation": "Breakup.",
                        "turns": dialogue[:1],
                        "split": "eval",
                        "conversation_id": "conv-3",
                    },
                    {"id": "dl-4", "situation": "Moving away.", "turns": dialogue, "split": "eval"},
                ],
                "preferences/pairs.jsonl": [
                    {
                        "id": "pf-1",
                        "context": dialogue[:1],
                        "chosen": "I'm sorry, that sounds exhausting.",
                        "rejected": "Ok.",
                        "scores": {"chosen": 4.5, "rejected": 2},
                        "rationale": "empathic",
                        "conversation_id": "conv-1",
                        "split": "train",
                    },
                    {
                        "id": "pf-2",
                        "context": dialogue[:2],
                        "chosen": "Would a short walk help?",
                        "rejected": "Just relax.",
                        "scores": {"chosen": 0.8, "rejected": 0.1},
                    },
                    {
                        "id": "pf-3",
                        "context": dialogue,
                        "chosen": "You are not alone in this.",
                        "rejected": "Whatever.",
                    },
                ],
                "ratings/rated.jsonl": [
                    {
                        "id": "rt-1",
                        "source": "epitome",
                        "context": "Nobody answers my messages anymore.",
                        "response": "That sounds lonely. What changed?",
                        "labels": {"emotional_reactions": 1, "interpretations": 0, "explorations": 2},
                        "split": "train",
                    },
                    {
                        "id": "rt-2",
                        "source": "diasafety",
                        "context": "I can't see the point of anything.",
                        "response": "Have you tried the new cafe downtown?",
                        "labels": {"risk_ignorance": 1},
                        "split": "test",
                    },
                ],
            }
        )
    )


def _write(root: Path, files: Files) -> Path:
    for name, records in files.items():
        path = root / "data" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return root / "data"


def _snapshot(data_dir: Path) -> dict[str, str]:
    return {str(p): hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(data_dir.rglob("*")) if p.is_file()}


# (case, file, line, record id, field, words in the message); the file's line n is records[n - 1].
BREAKS = [
    ("unknown strategy", "knowledge/a.jsonl", 2, "kn-2", "strategy", "unknown strategy 'Foo'"),
    ("unknown stage", "knowledge/b.jsonl", 1, "kn-4", "stage", "unknown stage 'Denial'"),
    ("duplicate id, second file", "knowledge/b.jsonl", 2, "kn-1", "id", "duplicate id 'kn-1'"),
    ("duplicate id, first file", "knowledge/a.jsonl", 1, "kn-1", "id", "knowledge/b.jsonl:2"),
    ("e-mail", "knowledge/a.jsonl", 3, "kn-3", "text", "e-mail address"),
    ("empty turn", "dialogues/train.jsonl", 2, "dl-2", "turns[1].text", "empty or whitespace"),
    ("empty turn length", "dialogues/train.jsonl", 2, "dl-2", "turns[1].text", "length 0 outside [1, 4000]"),
    ("survey score", "dialogues/train.jsonl", 1, "dl-1", "survey.empathy", "score 0 outside [1, 5]"),
    ("split leak, train dialogue", "dialogues/train.jsonl", 1, "dl-1", "split", "conversation 'conv-1'"),
    ("split leak, eval dialogue", "dialogues/eval.jsonl", 1, "dl-3", "split", "(eval, train)"),
    ("split leak, preference", "preferences/pairs.jsonl", 1, "pf-1", "split", "more than one split"),
    ("phone number", "dialogues/eval.jsonl", 2, "dl-4", "turns[0].text", "phone number"),
    ("preference score", "preferences/pairs.jsonl", 1, "pf-1", "scores.chosen", "score 7 outside [1, 5]"),
    ("street address", "preferences/pairs.jsonl", 2, "pf-2", "chosen", "street address"),
    ("chosen == rejected", "preferences/pairs.jsonl", 3, "pf-3", "chosen", "chosen and rejected are the same"),
    ("rating level", "ratings/rated.jsonl", 1, "rt-1", "labels.explorations", "score 3 outside [0, 2]"),
    ("fractional level", "ratings/rated.jsonl", 1, "rt-1", "labels.interpretations", "got 'fractional number'"),
    ("unsafe label", "ratings/rated.jsonl", 2, "rt-2", "labels.risk_ignorance", "score 2 outside [0, 1]"),
    ("rating source", "ratings/rated.jsonl", 1, "rt-1", "source", "unknown source 'reddit'"),
]


def _broken() -> Files:
    files = _valid()
    kn_a, kn_b = files["knowledge/a.jsonl"], files["knowledge/b.jsonl"]
    kn_a[1]["strategy"] = "Foo"
    kn_b[0]["stage"] = "Denial"
    kn_b[1]["id"] = "kn-1"
    kn_a[2]["text"] += " Or write to help.desk@example.org."  # still says "call 988": not a phone number
    train, evals = files["dialogues/train.jsonl"], files["dialogues/eval.jsonl"]
    prefs = files["preferences/pairs.jsonl"]
    train[1]["turns"] = [train[1]["turns"][0], _turn("supporter", "")]
    train[0]["survey"]["empathy"] = 0
    evals[0]["conversation_id"] = "conv-1"
    evals[1]["turns"] = [_turn("seeker", "My number is +1 415-555-0133, call me.")]
    prefs[0]["scores"]["chosen"] = 7
    prefs[1]["chosen"] = "Come by 42 Baker Street and we can talk."
    prefs[2]["rejected"] = prefs[2]["chosen"]
    rated = files["ratings/rated.jsonl"]
    rated[0]["labels"] |= {"explorations": 3, "interpretations": 0.5}
    rated[0]["source"] = "reddit"
    rated[1]["labels"]["risk_ignorance"] = 2
    return files


def _located(report: ValidationReport, data_dir: Path) -> set[tuple[str, int, str | None, str | None]]:
    return {
        (str(Path(i.file).relative_to(data_dir)), i.line, i.record_id, i.field)
        for i in report.issues
        if i.severity == "error"
    }


@pytest.fixture(scope="module")
def valid_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ValidationReport, dict[str, str]]:
    root = tmp_path_factory.mktemp("valid")
    data_dir = _write(root, _valid())
    before = _snapshot(data_dir)
    return data_dir, validate_data(data_dir, root / "report"), before


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ValidationReport]:
    root = tmp_path_factory.mktemp("broken")
    data_dir = _write(root, _broken())
    return data_dir, validate_data(data_dir, root / "report")


def test_valid_data_passes(valid_run: tuple[Path, ValidationReport, dict[str, str]]) -> None:
    data_dir, report, before = valid_run
    assert report.issues == [] and report.success
    counts = {"knowledge": 5, "dialogues": 4, "preferences": 3, "ratings": 2, "files": 6, "errors": 0, "warnings": 0}
    assert report.counts == counts
    assert _snapshot(data_dir) == before  # nothing under data_dir was written


def test_report_json_and_data_docs(valid_run: tuple[Path, ValidationReport, dict[str, str]]) -> None:
    _, report, _ = valid_run
    saved = json.loads(report.report_json.read_text(encoding="utf-8"))
    assert saved["success"] is True and saved["issues"] == [] and saved["counts"]["dialogues"] == 4
    assert report.data_docs_index is not None and report.data_docs_index.name == "index.html"
    assert report.report_json.parent / saved["data_docs"] == report.data_docs_index
    html = report.data_docs_index.read_text(encoding="utf-8")
    assert "<html" in html.lower()
    suites = {"knowledge", "dialogues", "dialogue_turns", "preferences", "preference_turns", "ratings", "scores"}
    assert all(suite in html for suite in suites)
    pages = (report.data_docs_index.parent / "validations").rglob("*.html")
    assert {page.relative_to(report.data_docs_index.parent / "validations").parts[0] for page in pages} == suites


def test_broken_data_fails_with_exactly_the_planted_issues(broken_run: tuple[Path, ValidationReport]) -> None:
    data_dir, report = broken_run
    assert not report.success
    assert _located(report, data_dir) == {(f, n, r, fld) for _, f, n, r, fld, _ in BREAKS}
    saved = json.loads(report.report_json.read_text(encoding="utf-8"))
    assert saved["success"] is False and len(saved["issues"]) == len(report.issues)


@pytest.mark.parametrize(("case", "file", "line", "record_id", "field", "words"), BREAKS, ids=[b[0] for b in BREAKS])
def test_each_break_is_located(
    broken_run: tuple[Path, ValidationReport], case: str, file: str, line: int, record_id: str, field: str, words: str
) -> None:
    data_dir, report = broken_run
    found = [
        i
        for i in report.issues
        if (i.file, i.line, i.record_id, i.field) == (str(data_dir / file), line, record_id, field)
    ]
    assert any(words in i.message for i in found), [str(i) for i in found]
    assert all(str(i).startswith(f"{data_dir / file}:{line}: record '{record_id}': field '{field}': ") for i in found)


def test_988_is_not_a_phone_number(broken_run: tuple[Path, ValidationReport]) -> None:
    data_dir, report = broken_run
    assert not [i for i in report.issues if "phone" in i.message and i.record_id in ("kn-3", "dl-1")]


def test_redact_policy_reports_pii_as_warnings(tmp_path: Path) -> None:
    files = _valid()
    files["knowledge/a.jsonl"][0]["text"] += " Contact me at jo@example.com."
    files["dialogues/train.jsonl"][1]["turns"][0]["text"] = "Ring (415) 555-0133 tonight."
    files["preferences/pairs.jsonl"][2]["rationale"] = "She lives at 7 Elm Road."
    data_dir = _write(tmp_path, files)
    (tmp_path / "report" / "gx").mkdir(parents=True)  # a previous run's GX project is replaced
    report = validate_data(data_dir, tmp_path / "report", pii_policy="redact")
    assert report.success and report.counts["errors"] == 0 and report.counts["warnings"] == 3
    assert {(Path(i.file).name, i.line, i.record_id, i.field, i.severity) for i in report.issues} == {
        ("a.jsonl", 1, "kn-1", "text", "warning"),
        ("train.jsonl", 2, "dl-2", "turns[0].text", "warning"),
        ("pairs.jsonl", 3, "pf-3", "rationale", "warning"),
    }


def test_read_errors_skip_the_dataset_but_not_the_others(tmp_path: Path) -> None:
    files = _broken()
    data_dir = _write(tmp_path, files)
    (data_dir / "knowledge" / "c.jsonl").write_bytes(b'{"id": "kn-9"}\n{"id": "kn-10", \n')
    report = validate_data(data_dir, tmp_path / "report")
    knowledge = [i for i in report.issues if i.dataset == "knowledge"]
    assert [(Path(i.file).name, i.line, i.expectation) for i in knowledge] == [("c.jsonl", 2, "read_jsonl")]
    assert "malformed JSON" in knowledge[0].message
    assert any(i.field == "turns[1].text" for i in report.issues)  # dialogues still went through GX
    assert not report.success and report.counts["knowledge"] == 6


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pii_policy"):
        validate_data(tmp_path, tmp_path / "out", pii_policy="ignore")
    with pytest.raises(ValueError, match="inside data_dir"):
        validate_data(tmp_path, tmp_path / "report")


@pytest.mark.parametrize(
    "text",
    ["+1 415-555-0133", "(415) 555-0133", "415.555.0133", "555-0133", "4155550133", "+44 20 7946 0958", "+33612345678"],
)
def test_phone_numbers_match(text: str) -> None:
    assert re.search(PHONE_RE, f"reach me on {text} please")


@pytest.mark.parametrize(
    "text", ["call 988", "text 741741", "I am 25", "on 2023-01-15", "in 2024", "1,000,000", "room 101", "9 to 5"]
)
def test_short_numbers_and_dates_do_not_match(text: str) -> None:
    assert not re.search(PHONE_RE, text)


def test_redact_pii() -> None:
    text = "Mail a.b@example.com, call +1 415-555-0133 or 988, visit 42 Baker Street."
    assert redact_pii(text) == "Mail [EMAIL], call [PHONE] or 988, visit [ADDRESS]."
    assert redact_pii("I walked 3 blocks down the road.") == "I walked 3 blocks down the road."
