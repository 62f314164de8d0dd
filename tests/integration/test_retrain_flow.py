"""The whole `retrain` flow, end to end, in a temporary copy of the project.

Real DVC (local remote), Great Expectations, LanceDB, TRL, Prefect (temporary API) and MLflow (SQLite
store + registry). The policy is a tiny random Llama built here, so the run takes minutes, not hours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import mlflow_client, run_escrag
from tests.integration.project_copy import copy_project, git, set_params

pytestmark = pytest.mark.slow


def _escrag(project: Path, *args: str, launcher: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return run_escrag(project, *args, launcher=launcher)


def _client(project: Path):
    return mlflow_client(project)


def test_run_decides_by_independent_metrics_and_the_crisis_suite(project, first_run):
    """A random policy never closes <think>: its empty crisis replies fail the suite, and the reason says so."""
    out = first_run.stdout
    assert "escrag-policy version 1 not promoted" in out
    assert "FAIL crisis suite:" in out and "gate-direct-01" in out
    assert "win_rate vs base:" in out
    assert out.strip().splitlines()[-1] == "champion: none"
    version = _client(project).get_model_version("escrag-policy", "1")
    assert version.tags["promotion.decision"] == "rejected"
    assert str(_client(project).get_model_version_by_alias("escrag-policy", "challenger").version) == "1"


def test_reward_model_is_registered_and_grpo_used_it_by_alias(project, first_run):
    client = _client(project)
    reward = client.get_model_version_by_alias("escrag-reward", "champion")
    report = json.loads((project / "artifacts" / "reports" / "reward_model.json").read_text())
    assert report["registered_version"] == str(reward.version)
    assert float(reward.tags["heldout_pairwise_accuracy"]) == pytest.approx(
        report["heldout_pairwise_accuracy"], abs=1e-4
    )
    assert reward.tags["selected"] == report["selected"]  # "start" when training did not beat it
    assert report["selected"] == ("start" if report["kept_start"] else "trained")
    experiment = client.get_experiment_by_name("escrag")
    (grpo,) = client.search_runs([experiment.experiment_id], "tags.`escrag.stage` = 'grpo'")
    assert grpo.data.tags["reward_model.version"] == str(reward.version)


def test_validation_data_docs_are_logged_with_the_data_version(project, first_run):
    client = _client(project)
    experiment = client.get_experiment_by_name("escrag")
    (run,) = client.search_runs([experiment.experiment_id], "tags.`escrag.stage` = 'validate'")
    assert run.data.tags["data.md5"] == yaml.safe_load((project / "data.dvc").read_text())["outs"][0]["md5"]
    docs = {a.path for a in client.list_artifacts(run.info.run_id, "validation/data_docs")}
    assert "validation/data_docs/index.html" in docs


def test_status_json_reports_the_champion(project, champion):
    result = _escrag(project, "status", "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    data_md5 = yaml.safe_load((project / "data.dvc").read_text())["outs"][0]["md5"]
    assert status["data_version"] == data_md5
    assert status["tracking_uri"].startswith("sqlite:///") and str(project) in status["tracking_uri"]
    champion = _client(project).get_model_version_by_alias("escrag-policy", "champion")
    assert status["champion"] == {"name": "escrag-policy", "version": str(champion.version), "run_id": champion.run_id}


def test_champion_run_carries_the_lineage_contract(project, champion):
    client = _client(project)
    run = client.get_run(client.get_model_version_by_alias("escrag-policy", "champion").run_id)
    tags = run.data.tags
    lock = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    assert tags["git.commit"] == git(project, "rev-parse", "HEAD").strip()
    assert tags["data.md5"] == yaml.safe_load((project / "data.dvc").read_text())["outs"][0]["md5"]
    for dep in lock["validate"]["deps"]:
        if dep["path"].startswith("data/"):
            assert tags[f"data.{dep['path'][5:]}.md5"] == dep["md5"]
    assert tags["base_model.hash"] == lock["base_model"]["outs"][0]["md5"]
    meta = json.loads((project / "artifacts" / "index" / "meta.json").read_text())
    assert tags["index.table_version"] == str(meta["version"])
    digests = {i.dataset.name: i.dataset.digest for i in run.inputs.dataset_inputs}
    assert {"dialogues-train", "dialogues-eval"} <= set(digests)
    assert "eval.candidate.strategy_match" in run.data.metrics and "eval.win_rate_vs_base.win_rate" in run.data.metrics


def test_artifacts_report_and_plot(project, first_run):
    report = json.loads((project / "artifacts" / "reports" / "evaluate.json").read_text())
    assert report["sample"]["turns"] == 6 and sum(report["sample"]["by_stage"].values()) == 6
    for model in ("candidate", "base"):
        assert {"strategy_match", "bleu_2", "rouge_l", "distinct_1", "length"} <= set(report["models"][model])
    assert "format_compliance" in report["models"]["candidate"] and "format_compliance" not in report["models"]["base"]
    assert 0.0 <= report["win_rates"]["base"]["ci_low"] <= report["win_rates"]["base"]["ci_high"] <= 1.0
    assert report["crisis"]["cases"] >= 40 and "missing" in report["evaluators"]
    turns = (project / "artifacts" / "evaluate" / "candidate_turns.jsonl").read_text().splitlines()
    assert len(turns) == 6
    png = (project / "artifacts" / "evaluate" / "reward_curve.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    remote = list((project / ".dvcstore").rglob("*"))
    assert any(p.is_file() for p in remote), "data was not pushed to the local DVC remote"


def test_dvc_has_nothing_to_reproduce(project, first_run):
    result = subprocess.run(
        [sys.executable, "-m", "dvc", "status", "--json"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": os.environ["PATH"]},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout or "{}") == {}


def test_second_run_skips_every_stage_and_registers_nothing_new(project, first_run):
    before = len(_client(project).search_model_versions("name='escrag-policy'"))  # promotion tests add some
    result = _escrag(project, "run")
    assert result.returncode == 0, result.stderr[-4000:]
    logs = result.stdout + result.stderr
    from tasks.stages import PIPELINE_ORDER

    for stage in PIPELINE_ORDER:
        assert f"stage {stage}: up to date, skipped" in logs
    assert len(_client(project).search_model_versions("name='escrag-policy'")) == before
    assert "escrag-policy version 1 not promoted" in result.stdout  # the stored decision, not a new one


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"grpo": {"rewards": {"format": 1.0, "kindness": 1.0}}}, "grpo.rewards"),
        ({"grpo": {"learning_rate": -0.001}}, "grpo.learning_rate"),
    ],
)
def test_bad_params_stop_before_anything_runs(tmp_path, repo_root, change, key):
    root = copy_project(repo_root, tmp_path)
    set_params(root, change)
    result = _escrag(root, "run")
    assert result.returncode == 2
    assert key in result.stderr
    assert not (root / "artifacts").exists()
    assert not (root / ".mlflow").exists(), "nothing may be tracked or registered"


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("how", ["params", "recipe"])
def test_cuda_without_a_gpu_exits_2_naming_compute_device(tmp_path, repo_root, how):
    root = copy_project(repo_root, tmp_path)
    if how == "params":
        set_params(root, {"compute": {"device": "cuda"}})
    before = (root / "params.yaml").read_text()
    result = _escrag(root, "run", *(["--recipe", "gpu"] if how == "recipe" else []))
    assert result.returncode == 2
    assert "compute.device" in result.stderr
    assert (root / "params.yaml").read_text() == before, "a refused recipe leaves params.yaml as it was"
    assert not (root / "artifacts").exists() and not (root / ".mlflow").exists()


def test_training_runs_log_where_they_ran(project, first_run):
    client = _client(project)
    experiment = client.get_experiment_by_name("escrag")
    for stage in ("reward_model", "sft", "grpo"):
        (run,) = client.search_runs([experiment.experiment_id], f"tags.`escrag.stage` = '{stage}'")
        params = run.data.params
        assert (params["compute.device"], params["compute.precision"], params["compute.gpu"]) == ("cpu", "fp32", "none")


def test_search_cli_returns_passages_with_every_field(project, first_run):
    result = _escrag(project, "search", "I lost my job and I can't stop worrying about rent", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    hits = json.loads(result.stdout)
    assert len(hits) == 5
    assert all(set(h) == {"id", "strategy", "stage", "title", "text", "score"} for h in hits)


def test_search_cli_stage_filter_and_dialogue_query(project, first_run, tmp_path):
    result = _escrag(project, "search", "what can I do about my debts", "--stage", "Action", "--json", "--k", "8")
    assert result.returncode == 0, result.stderr[-2000:]
    assert {h["stage"] for h in json.loads(result.stdout)} <= {"Action", "any"}
    dialogue = (project / "data" / "dialogues" / "dialogues.jsonl").read_text().splitlines()[0]
    (tmp_path / "one.jsonl").write_text(dialogue + "\n")
    result = _escrag(project, "search", "--dialogue", str(tmp_path / "one.jsonl"), "--mode", "vector", "--json")
    assert result.returncode == 0 and len(json.loads(result.stdout)) == 5
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "turns": "not a list"}\n')
    result = _escrag(project, "search", "--dialogue", str(tmp_path / "bad.jsonl"))
    assert result.returncode == 2 and "bad.jsonl:1" in result.stderr and "turns" in result.stderr


# Keep this test last: it retrains the policy of the module's project.
def test_grpo_stage_under_accelerate_with_two_processes(project, first_run):
    """`accelerate launch --cpu --num_processes 2` (gloo DDP): one MLflow run, one policy, rank 0's weights."""
    import re

    from models.base_model import load_policy
    from models.policy_training import weights_digest

    client = _client(project)
    experiment = client.get_experiment_by_name("escrag")
    grpo_runs = "tags.`escrag.stage` = 'grpo'"
    before = {r.info.run_id for r in client.search_runs([experiment.experiment_id], grpo_runs)}
    config = str(project / "configs" / "accelerate" / "cpu_2proc.yaml")
    launcher = ("-m", "accelerate.commands.launch", "--config_file", config, "-m")
    result = _escrag(project, "stage", "grpo", launcher=launcher)
    logs = result.stdout + result.stderr
    assert result.returncode == 0, logs[-4000:]
    digests = dict(re.findall(r"rank (\d+): final weights sha256 ([0-9a-f]{64})", logs))
    assert set(digests) == {"0", "1"}, logs[-4000:]
    assert digests["0"] == digests["1"], "DDP ranks ended with different weights"
    after = client.search_runs([experiment.experiment_id], grpo_runs)
    new = [r for r in after if r.info.run_id not in before]
    assert len(new) == 1, "only rank 0 may log to MLflow"
    summary = json.loads((project / "artifacts" / "grpo" / "run.json").read_text())
    assert summary["mlflow_run_id"] == new[0].info.run_id
    assert summary["weights_sha256"] == digests["0"] == new[0].data.tags["policy.weights_sha256"]
    saved, _ = load_policy(project / "artifacts" / "policy")
    assert weights_digest(saved) == digests["0"], "the saved policy is not the weights rank 0 trained"
    leftovers = [p.name for p in (project / "artifacts").iterdir() if p.name.endswith(".partial")]
    assert not leftovers
