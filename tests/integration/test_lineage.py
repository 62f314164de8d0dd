"""`escrag lineage` and `escrag diff` on the shared whole-flow project: the chain behind the champion read back
from the real MLflow store, checked against the project's data.dvc and dvc.lock. No new pipeline runs."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tasks.lineage import UPSTREAM_STAGES
from tests.integration.conftest import mlflow_client, run_escrag

pytestmark = pytest.mark.slow

CHAMPION_URI = "models:/escrag-policy@champion"
TRACKED_STAGES = ("validate", "retrieval_eval", "evaluators", "reward_model", "sft", "grpo")  # stages that log runs


@pytest.fixture(scope="module")
def lineage(project: Path, champion: str) -> dict:
    result = run_escrag(project, "lineage", CHAMPION_URI, "--json")
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout)


def _lock(project: Path) -> dict:
    return yaml.safe_load((project / "dvc.lock").read_text())["stages"]


def test_lineage_names_the_champion_version_and_its_run(project, champion, lineage):
    model = lineage["model"]
    registered = mlflow_client(project).get_model_version("escrag-policy", champion)
    assert (model["name"], model["version"], model["run_id"]) == ("escrag-policy", champion, registered.run_id)
    assert "champion" in model["aliases"] and re.fullmatch(r"[0-9a-f]{64}", model["weights_sha256"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True).stdout.strip()
    assert lineage["code"]["git_commit"] == head and isinstance(lineage["code"]["git_dirty"], bool)


def test_data_md5s_are_those_of_data_dvc_and_dvc_lock(project, lineage):
    data_dvc = yaml.safe_load((project / "data.dvc").read_text())
    assert lineage["data"]["version"] == data_dvc["outs"][0]["md5"]
    validate_deps = {d["path"]: d["md5"] for d in _lock(project)["validate"]["deps"] if d["path"].startswith("data/")}
    assert {f"data/{k}": v for k, v in lineage["data"]["datasets"].items()} == validate_deps
    lock_outs = {o["path"]: o["md5"] for stage in UPSTREAM_STAGES for o in _lock(project)[stage]["outs"]}
    assert {k: v for k, v in lineage["upstream_outputs"].items() if k in lock_outs} == lock_outs
    assert lineage["base_model"]["hash"] == lock_outs["artifacts/base_model"]


def test_validation_index_and_reward_model_are_recorded(project, lineage):
    validation = lineage["validation"]
    assert validation["success"] is True and validation["issues"] == 0
    assert validation["counts"]["knowledge"] > 0 and validation["report_html"].endswith("validation/report.html")
    meta = json.loads((project / "artifacts" / "index" / "meta.json").read_text())
    index = lineage["index"]
    assert index["table_version"] == str(meta["version"]) and index["data_tag_at_version"]
    assert any(lineage["data"]["version"].removesuffix(".dir") in tag for tag in index["data_tags"])
    reward = lineage["reward_model"]
    saved = json.loads((project / "artifacts" / "reports" / "reward_model.json").read_text())
    assert reward["version"] == str(saved["registered_version"]) and reward["run_id"] == saved["mlflow_run_id"]
    assert 0.0 <= reward["heldout_pairwise_accuracy"] <= 1.0


def test_every_stage_run_is_linked_with_its_params(project, lineage):
    stages, runs = lineage["stages"], lineage["runs"]
    for stage in TRACKED_STAGES:
        assert stages[stage]["run_id"], f"{stage}: {stages[stage]['linked_by']}"
        assert runs[stage] == stages[stage]["run_id"]
    client = mlflow_client(project)
    for stage in TRACKED_STAGES:
        assert client.get_run(runs[stage]).data.tags["escrag.stage"] == stage
    assert stages["grpo"]["run_id"] == lineage["model"]["run_id"] == runs["evaluate"]
    assert stages["base_model"]["run_id"] is None  # logs no run: identified by its output md5
    for stage, prefix in (("reward_model", "reward_model."), ("sft", "sft."), ("grpo", "grpo.")):
        assert any(k.startswith(prefix) for k in stages[stage]["params"]), stage
        assert stages[stage]["params"] == client.get_run(runs[stage]).data.params
    assert sorted(i["name"] for i in stages["grpo"]["inputs"]) == ["dialogues-eval", "dialogues-train"]


def test_evaluation_and_promotion_are_those_of_the_version(project, champion, lineage):
    evaluation = lineage["evaluation"]
    report = json.loads((project / "artifacts" / "reports" / "evaluate.json").read_text())
    assert evaluation["report"]["mlflow_run_id"] == lineage["model"]["run_id"] == report["mlflow_run_id"]
    assert evaluation["metrics"]["eval.win_rate_vs_base.win_rate"] == pytest.approx(
        report["win_rates"]["base"]["win_rate"]
    )
    promotion = lineage["promotion"]
    assert promotion["decision"] in ("promoted", "rejected") and promotion["reason"]
    assert promotion["latest_decision"] == "promoted" and "manual: plumbing test" in promotion["latest_reason"]
    assert any(e["to_version"] == champion and e["decision"] == "promoted" for e in promotion["history"])
    assert lineage["champion_diff"] == {"champion": champion, "is_champion": True, "identical": True, "differences": 0}


def test_text_and_html_reports(project, champion, tmp_path):
    text = run_escrag(project, "lineage", f"models:/escrag-policy/{champion}")
    assert text.returncode == 0, text.stderr[-3000:]
    for part in ("lineage of", "code", "data version", "validation        passed", "index", "base model",
                 "reward model", "stages", "evaluation", "promotion", "runs", "differences from champion"):  # fmt: skip
        assert part in text.stdout, part
    page = tmp_path / "lineage.html"
    result = run_escrag(project, "lineage", CHAMPION_URI, "--html", str(page))
    assert result.returncode == 0, result.stderr[-3000:]
    html = page.read_text()
    for heading in ("Code", "Data", "Validation", "Index", "Base model", "Stages, runs and params", "Reward model",
                    "Evaluation", "Promotion", "Runs behind each step", "Differences from the champion"):  # fmt: skip
        assert f"<h2>{heading}</h2>" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)


@pytest.mark.parametrize("bad", ["models:/escrag-policy/999", "models:/escrag-policy@nobody", "f" * 32, "v1"])
def test_a_model_that_does_not_exist_exits_2_naming_it(project, first_run, bad):
    result = run_escrag(project, "lineage", bad)
    errors = [line for line in result.stderr.splitlines() if line.startswith("escrag lineage:")]
    assert result.returncode == 2 and len(errors) == 1 and f"MODEL {bad}" in errors[0].replace("'", "")


def test_diff_of_a_model_against_itself_reports_no_differences(project, champion):
    result = run_escrag(project, "diff", CHAMPION_URI, f"models:/escrag-policy/{champion}", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    diff = json.loads(result.stdout)
    assert diff["identical"] and diff["differences"] == 0
    assert any(m["metric"] == "eval.win_rate_vs_base.win_rate" for m in diff["metrics_side_by_side"])
    text = run_escrag(project, "diff", CHAMPION_URI, f"models:/escrag-policy/{champion}")
    assert "no differences" in text.stdout.splitlines()[0]


def _run_on_other_data(project: Path, champion: str) -> str:
    """A copy of the champion's run, recorded as if trained on other dialogues with another learning rate, in an
    experiment of its own (the registry and the escrag experiment are left as they are)."""
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow_client(project)
    source = client.get_run(client.get_model_version("escrag-policy", champion).run_id)
    experiment = client.get_experiment_by_name("lineage-test") or client.create_experiment("lineage-test")
    experiment_id = experiment if isinstance(experiment, str) else experiment.experiment_id
    run = client.create_run(experiment_id, tags={k: v for k, v in source.data.tags.items() if k != "mlflow.runName"})
    tags = {"data.dialogues.md5": "0" * 32 + ".dir"}
    params = {**source.data.params, "grpo.learning_rate": "0.5"}
    metrics = {k: v + 1.0 for k, v in source.data.metrics.items() if k.startswith("eval.")}
    client.log_batch(run.info.run_id, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
                     tags=[RunTag(k, v) for k, v in tags.items()])  # fmt: skip
    items = [Param(k, str(v)) for k, v in params.items()]
    for start in range(0, len(items), 100):  # MLflow takes at most 100 params a batch
        client.log_batch(run.info.run_id, params=items[start : start + 100])
    client.set_terminated(run.info.run_id)
    return run.info.run_id


def test_diff_names_a_real_difference(project, champion):
    other = _run_on_other_data(project, champion)
    result = run_escrag(project, "diff", CHAMPION_URI, other, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    diff = json.loads(result.stdout)
    sections = {name: {row["item"]: row for row in rows} for name, rows in diff["sections"].items()}
    assert sections["data"]["dialogues"]["b"] == "0" * 32 + ".dir"
    assert sections["params"]["grpo: grpo.learning_rate"]["b"] == "0.5"
    assert "eval.win_rate_vs_base.win_rate" in sections["metrics"] and not diff["identical"]
    assert diff["a"] == f"escrag-policy v{champion}" and diff["b"] == f"run {other}"
