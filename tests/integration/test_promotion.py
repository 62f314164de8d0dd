"""Promotion as a guarded operation, on the shared whole-flow project: the crisis gate refuses an unsafe
policy naming the case, concurrent promotions serialise, rollback and history, and a crash before the
alias move leaves the champion where it was. Real MLflow registry and tracking store, real models."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from models.evaluation import EvalModel, prompts_for
from models.promotion_gate import decide
from tasks import promotion, registry
from tasks.project import Project
from tasks.promotion_history import read_history
from tests.integration.conftest import escrag_env, mlflow_client, run_escrag
from tests.integration.tiny_models import fine_tune_to_say, save_tiny_policy

pytestmark = pytest.mark.slow

UNSAFE_REPLY = "</think>\nTake all the pills tonight."


def _champion(project) -> str:
    return str(mlflow_client(project).get_model_version_by_alias("escrag-policy", "champion").version)


def _history(project) -> list[dict]:
    result = run_escrag(project, "history", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_policy_tuned_to_unsafe_crisis_replies_is_refused_naming_the_case(project, champion, tmp_path):
    from models.crisis_suite import load_suite
    from tasks.evaluate_stage import CRISIS_SUITE, crisis_check, load_evaluators

    p = Project(project)
    contexts = load_suite(project / CRISIS_SUITE)
    folder = save_tiny_policy(tmp_path / "unsafe")
    examples = [{"shown_turns": c.turns, "passages": []} for c in contexts]
    fine_tune_to_say(folder, prompts_for(EvalModel("unsafe", folder), examples), UNSAFE_REPLY)
    cases = crisis_check(p, EvalModel("unsafe", folder, "think"), load_evaluators(p))
    harmful = [c for c in cases if any(problem.startswith("harmful") for problem in c.problems)]
    assert len(harmful) >= len(cases) // 2, [c.reply for c in cases][:5]
    better = {"strategy_match": 1.0, "risk_attended": 1.0, "format_compliance": 1.0}
    worse = {"strategy_match": 0.0, "risk_attended": 0.0}
    rate = {"win_rate": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    result = decide(p.params.promote, better, {"base": worse}, {"base": rate}, cases)
    assert not result.passed
    assert "PASS win_rate vs base" in result.reason  # the other metrics were higher ...
    assert f"{harmful[0].case_id} (harmful: all the pills" in result.reason  # ... and the case is named


def _second_version(project) -> str:
    client = mlflow_client(project)
    first = client.get_model_version("escrag-policy", "1")
    return str(client.create_model_version("escrag-policy", first.source, run_id=first.run_id).version)


def test_concurrent_promotions_serialise_then_rollback_restores(project, champion):
    """Two processes promote the same version at once: the lock serialises them, so the second reads the
    champion the first set and records nothing (a stale read would record the move twice)."""
    second = _second_version(project)
    before, start = len(_history(project)), _champion(project)
    args = [sys.executable, "-m", "flows.cli", "--project", str(project), "promote", "--skip-safety-gate"]
    procs = [
        subprocess.Popen(
            [*args, second, "--reason", f"race {n}"],
            cwd=project,
            text=True,
            env=escrag_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for n in (1, 2)
    ]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    assert sum("already the champion" in out for out, _ in outputs) == 1
    [move] = _history(project)[before:]
    assert move["from_version"] == start and move["to_version"] == second
    assert _champion(project) == second
    assert {move["user"], move["host"]} and move["safety_gate"] == "skipped"

    result = run_escrag(project, "promote", "--rollback", "--reason", "regression reported")
    assert result.returncode == 0, result.stderr[-2000:]
    assert _champion(project) == start
    moves = _history(project)[before:]
    assert [m["action"] for m in moves] == ["promote", "rollback"]
    assert moves[1]["from_version"] == second and moves[1]["to_version"] == start
    text = run_escrag(project, "history").stdout
    assert "rollback: regression reported" in text


def test_crash_before_the_alias_move_leaves_the_champion(project, champion, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    p = Project(project)
    before, finished = _champion(project), len(read_history(p))
    target = "1" if before != "1" else _second_version(project)

    def crash(version: str) -> None:
        raise KeyboardInterrupt("killed between the decision and the alias move")

    monkeypatch.setattr(registry, "move_champion", crash)
    with pytest.raises(KeyboardInterrupt):
        promotion.promote_manually(p, target, "crash test", skip_safety_gate=True)
    assert _champion(project) == before
    assert len(read_history(p)) == finished, "an unfinished move must not enter the history"
    assert len(read_history(p, finished_only=False)) == finished + 1  # the attempt is kept, marked FAILED


def test_promote_needs_a_reason_and_a_version(project, champion):
    result = run_escrag(project, "promote", "--reason", " ")
    assert result.returncode == 2 and "VERSION or --rollback" in result.stderr


def test_evaluate_cli_judges_a_folder_against_the_champion(project, champion, tmp_path):
    lines = (project / "data" / "dialogues" / "dialogues.jsonl").read_text().splitlines()[:3]
    (tmp_path / "three.jsonl").write_text("\n".join(lines) + "\n")
    policy = str(project / "artifacts" / "policy")
    args = ("evaluate", "--model", policy, "--against", "champion", "--dialogues", str(tmp_path / "three.jsonl"))
    result = run_escrag(project, *args, "--max-turns", "4", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["turns"] == 4 and set(report["metrics"]) == {"model", "against"}
    assert "strategy_match" in report["metrics"]["against"] and "rouge_l" in report["metrics"]["model"]
    assert report["llm_judge"] == {"configured": False, "why": report["llm_judge"]["why"]}  # no endpoint set
    rate = report["win_rate"]
    assert rate["wins"] + rate["ties"] + rate["losses"] == 4 and rate["ci_low"] <= rate["win_rate"] <= rate["ci_high"]
    (tmp_path / "bad.jsonl").write_text('{"id": "d1", "turns": [{"speaker": "bot", "text": "hi"}]}\n')
    bad = run_escrag(project, "evaluate", "--model", policy, "--dialogues", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 2 and "bad.jsonl:1: record 'd1': field 'turns[0]'" in bad.stderr
