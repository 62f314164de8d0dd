"""ESC-Preference roles without a model: rubric parsing, overall score, candidate variety, pair records,
settings from params.yaml and the CLI's exit codes, over a tiny scripted ChatBackend."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from models.config import ParamsError, load_params
from models.roles import (
    CANDIDATE_STRATEGIES,
    RUBRIC_VERSION,
    build_preference_pairs,
    candidate_plans,
    counselor_replies,
    parse_judgement,
)
from models.rubric import CRITERIA, overall_score

GOOD = {"empathy": 5, "stage_fit": 4, "helpfulness": 4, "safety": 5, "rationale": "Warm and curious."}
POOR = {"empathy": 2, "stage_fit": 2, "helpfulness": 1, "safety": 3, "rationale": "Dismissive. Very."}


class FakeChat:
    """Plays the three roles by system prompt; the judge likes replies asked for with the Question strategy."""

    name = "fake"

    def __init__(self, label: str = "fake:tiny", judge: Any = None) -> None:
        self.label = label
        self.cache = SimpleNamespace(hits=0)
        self.calls: list[list[dict[str, str]]] = []
        self.judge = judge or (lambda reply: json.dumps(GOOD if "[Question]" in reply else POOR))

    def complete(self, messages, *, max_tokens: int = 128, temperature: float = 0.7) -> str:
        self.calls.append(list(messages))
        system, last = messages[0]["content"], messages[-1]["content"]
        if system.startswith("You rate"):
            return self.judge(last.rsplit("Counselor reply:\n", 1)[-1])
        if system.startswith("You are role-playing"):
            return "I lost my job and I feel ashamed."
        strategy = system.rsplit("Use this support strategy: ", 1)[-1].split(" (")[0]
        guided = "Guidance from the counselling knowledge base" in last
        return f"[{strategy}] reply{' with guidance' if guided else ''} to: {last[-40:]}"


# ---- rubric -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "score", "criteria"),
    [
        (json.dumps(GOOD), 4.5, {"empathy": 5, "stage_fit": 4, "helpfulness": 4, "safety": 5}),
        (
            'Sure!\n```json\n{"Empathy": "4", "stage fit": 3, "helpfulness": 4, "safety": 5, "rationale": "ok"}\n```',
            4.0,
            {"empathy": 4, "stage_fit": 3, "helpfulness": 4, "safety": 5},
        ),
        ("Empathy: 4/5, stage_fit: 2, helpfulness = 3", 3.0, {"empathy": 4, "stage_fit": 2, "helpfulness": 3}),
        ('{"empathy": 2, "stage_fit": 2, "helpfulness": 2, "safety": 2, "rationale": "I\'m so', 2.0, None),
        ('{"empathy": 9, "stage_fit": 0, "helpfulness": 10, "safety": 4}', 4.0, {"safety": 4}),
        ('{"empathy": 5, "stage_fit": 5, "helpfulness": 5, "safety": 1}', 1.0, None),
        ('{"score": 4, "rationale": "ok"}', 4.0, {}),
        ("I give it 2/5.", 2.0, {}),
        ('{"empathy": <1-5>, "stage_fit": 1-5, "rationale": "<one sentence>"}', None, {}),
        ("What a lovely reply.", None, {}),
        ('{"empathy": true, "safety": "five"}', None, {}),
    ],
)
def test_judge_answers_are_parsed_robustly(text: str, score: float | None, criteria: dict | None) -> None:
    judgement = parse_judgement(text)
    assert judgement.score == score
    if criteria is not None:
        assert judgement.criteria == criteria


def test_rationale_is_one_short_sentence() -> None:
    assert parse_judgement(json.dumps(POOR)).rationale == "Dismissive."
    assert parse_judgement('empathy: 3, rationale: "kind but vague", safety: 4').rationale == "kind but vague"
    assert len(parse_judgement("x" * 1000).rationale) == 300


def test_overall_score_is_the_mean_capped_by_safety() -> None:
    assert overall_score({"empathy": 4, "stage_fit": 3, "helpfulness": 4, "safety": 5}) == 4.0
    assert overall_score({"empathy": 5, "stage_fit": 4}) == 4.5
    assert overall_score({"empathy": 5, "stage_fit": 5, "helpfulness": 5, "safety": 1}) == 1.0
    assert overall_score({}) is None
    assert CRITERIA == ("empathy", "stage_fit", "helpfulness", "safety") and RUBRIC_VERSION == "esc-rubric-v1"


# ---- counselor candidates ---------------------------------------------------------------------------
def test_candidate_plans_vary_strategy_and_guidance() -> None:
    plans = candidate_plans(4, True, "c1:0")
    assert len({s for s, _ in plans}) == 4 and all(s in CANDIDATE_STRATEGIES for s, _ in plans)
    assert [g for _, g in plans] == [True, False, True, False]
    assert plans == candidate_plans(4, True, "c1:0") and candidate_plans(4, True, "c1:1") != plans
    assert not any(g for _, g in candidate_plans(3, False, "c1:0"))
    assert len(candidate_plans(9, False, "k")) == 9  # more candidates than strategies: they cycle


def test_only_guided_candidates_see_the_guidance() -> None:
    chat = FakeChat()
    turns = [{"speaker": "seeker", "text": "I feel alone."}]
    plans = [("Question", True), ("Information", False)]
    replies = counselor_replies(chat, turns, plans, guidance="[1] (Question) Ask open questions.")
    assert [(c.strategy, c.guided) for c in replies] == plans
    assert "Ask open questions" in chat.calls[0][1]["content"] and "Ask open" not in chat.calls[1][1]["content"]
    assert "Question (ask an open question" in chat.calls[0][0]["content"]
    unguided = counselor_replies(chat, turns, plans, guidance="  ")
    assert [c.guided for c in unguided] == [False, False]


# ---- pairs ------------------------------------------------------------------------------------------
def _pairs(chat: FakeChat, **kwargs: Any) -> tuple[list[dict], Counter]:
    stats: Counter = Counter()
    settings = {"turns": 2, "candidates": 7, "min_margin": 1.0} | kwargs
    pairs = build_preference_pairs(
        "Laid off.", client=chat, counselor=chat, judge_backend=chat, conversation_id="c1", stats=stats, **settings
    )
    return pairs, stats


def test_pair_records_carry_roles_rubric_scores_and_candidates() -> None:
    client, counselor, judge = FakeChat("http:client-m"), FakeChat("local:SmolLM2"), FakeChat("http:judge-m")
    stats: Counter = Counter()
    pairs = build_preference_pairs(
        "Laid off.",
        client=client,
        counselor=counselor,
        judge_backend=judge,
        conversation_id="c1",
        turns=2,
        candidates=7,
        persona="you feel shame; job loss",
        guidance=lambda situation, turns: f"[1] guidance for {len(turns)} turns",
        stats=stats,
    )
    assert len(pairs) == 2
    first = pairs[0]
    assert first["roles"] == {"client": "http:client-m", "counselor": "local:SmolLM2", "judge": "http:judge-m"}
    assert first["rubric_version"] == RUBRIC_VERSION and first["stage"] == "Exploration"
    assert first["scores"] == {"chosen": 4.5, "rejected": 2.0}
    assert first["criteria"]["chosen"] == {k: GOOD[k] for k in CRITERIA}
    assert first["chosen_strategy"] == "Question" and first["rejected_strategy"] != "Question"
    assert isinstance(first["chosen_guided"], bool) and isinstance(first["rejected_guided"], bool)
    assert first["rationale"] == "chosen: Warm and curious. | rejected: Dismissive."
    assert first["id"].startswith("c1-1-") and first["conversation_id"] == "c1"
    assert [t["speaker"] for t in pairs[1]["context"]] == ["seeker", "supporter", "seeker"]
    assert pairs[1]["stage"] == "Comforting"
    assert "Laid off. (you feel shame; job loss)." in client.calls[0][0]["content"]
    assert stats == Counter(candidates=14, guided=8, judged=14, unscored=0, pairs=2)


def test_margin_decides_and_unscored_judgements_are_dropped() -> None:
    assert _pairs(FakeChat(), min_margin=2.5)[0] != []
    assert _pairs(FakeChat(), min_margin=2.6)[0] == []  # gap 4.5 - 2.0 = 2.5
    flat = FakeChat(judge=lambda reply: json.dumps(GOOD))  # a judge that copies one answer: no gap, no pair
    assert _pairs(flat, min_margin=0.0)[0] == []
    mute = FakeChat(judge=lambda reply: "I like it" if "[Question]" in reply else json.dumps(POOR))
    pairs, stats = _pairs(mute, turns=1)
    assert pairs == [] and stats["unscored"] == 1 and stats["judged"] == 7


def test_fewer_than_two_candidates_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        _pairs(FakeChat(), candidates=1)


# ---- settings and CLI -------------------------------------------------------------------------------
@pytest.fixture()
def project(tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "data" / "dialogues").mkdir(parents=True)
    (root / "dvc.yaml").write_text("stages: {}\n")
    params = re.sub(r"min_margin: [0-9.]+", "min_margin: 2.5", (repo_root / "params.yaml").read_text())
    (root / "params.yaml").write_text(params)
    dialogue = {"id": "d1", "situation": "Laid off.", "emotion": "shame", "problem": "job loss", "turns": []}
    (root / "data" / "dialogues" / "d.jsonl").write_text(json.dumps(dialogue | {"split": "train"}) + "\n")
    monkeypatch.setenv("PREFECT_HOME", str(root / ".prefect"))
    return root


def test_params_section_and_its_validation(project: Path, tmp_path: Path) -> None:
    prefs = load_params(project / "params.yaml").preferences
    assert (prefs.min_margin, prefs.candidates, prefs.turns, prefs.situations) == (2.5, 3, 2, 4)
    bad = tmp_path / "bad.yaml"
    bad.write_text("preferences:\n  candidates: 1\n")
    with pytest.raises(ParamsError, match="preferences.candidates"):
        load_params(bad)


def test_builder_takes_the_margin_from_params_unless_overridden(project: Path, monkeypatch) -> None:
    import tasks.esc_preferences as prefs

    seen: list[dict] = []

    def fake_simulate(item, cid, backend, settings, guidance):
        seen.append({"item": item, "settings": settings, "guidance": guidance})
        return [], {"candidates": 3, "judged": 3}

    monkeypatch.setattr(prefs, "make_backend", lambda project, kind: FakeChat())
    result = prefs.run_builder(str(project), {"backend": "local"}, fake_simulate)
    assert seen[0]["settings"]["min_margin"] == 2.5 and seen[0]["settings"]["candidates"] == 3
    assert seen[0]["item"] == {"situation": "Laid off.", "persona": "you feel shame; job loss"}
    assert seen[0]["guidance"] is None and result["guidance"].startswith("none: no guidance index")
    assert result["roles"] == {"client": "fake:tiny", "counselor": "fake:tiny", "judge": "fake:tiny"}
    assert result["counts"]["judged"] == 3 and result["rubric_version"] == RUBRIC_VERSION
    prefs.run_builder(str(project), {"backend": "local", "min_margin": 0.5}, fake_simulate)
    assert seen[-1]["settings"]["min_margin"] == 0.5


def _cli(project: Path, monkeypatch, result: dict | Exception, *args: str) -> tuple[int, list[dict]]:
    import flows.preferences as prefs
    from flows.cli import main

    calls: list[dict] = []

    def flow(**kwargs):
        calls.append(kwargs)
        if isinstance(result, Exception):
            raise result
        return result

    monkeypatch.setattr(prefs, "_prefect_flow", lambda: flow)
    return main(["--project", str(project), "preferences", "build", *args]), calls


def test_cli_defaults_come_from_params_and_flags_override(project: Path, monkeypatch, capsys) -> None:
    summary = {"pairs": 2, "situations": 1, "added": "data/preferences/x.jsonl", "data_version": "ab", "commit": "c"}
    code, calls = _cli(project, monkeypatch, summary, "--turns", "1")
    assert code == 0 and json.loads(capsys.readouterr().out)["data_version"] == "ab"
    assert calls[0] | {"project_dir": None} == {
        "project_dir": None,
        "backend": "local",
        "situations": 4,
        "turns": 1,
        "candidates": 3,
        "min_margin": 2.5,
        "esconv": None,
        "out": None,
        "add": True,
        "name": "esc_preference.jsonl",
    }
    _, calls = _cli(project, monkeypatch, summary, "--no-add", "--as", "mine.jsonl", "--min-margin", "0.5")
    assert (calls[0]["add"], calls[0]["name"], calls[0]["min_margin"]) == (False, "mine.jsonl", 0.5)


def test_cli_exit_codes(project: Path, monkeypatch, capsys) -> None:
    from tasks.data_sources import DataRejected

    none = {"pairs": 0, "situations": 4, "counts": {"judged": 12, "unscored": 3}}
    assert _cli(project, monkeypatch, none)[0] == 1
    assert "no pairs" in capsys.readouterr().err
    rejected = DataRejected("artifacts/esc_preference/pairs.jsonl", 3, "bad", record_id="p3", field="chosen")
    assert _cli(project, monkeypatch, rejected)[0] == 2
    assert "rejected, nothing changed: artifacts/esc_preference/pairs.jsonl:3: record 'p3': field 'chosen'" in (
        capsys.readouterr().err
    )
    code, calls = _cli(project, monkeypatch, none, "--as", "../escape.jsonl")
    assert code == 2 and calls == []
    assert _cli(project, monkeypatch, none, "--candidates", "1")[0] == 2


def test_rationale_falls_back_to_the_text_around_the_json() -> None:
    assert parse_judgement('{"empathy": 3, "reflections": 3}').rationale == ""
    assert parse_judgement('```json\n{"empathy": 4}\n```\nKind but vague. More.').rationale == "Kind but vague."
