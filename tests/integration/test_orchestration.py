"""escrag orchestrated for real, on 127.0.0.1 and free ports: `escrag services start` runs a Prefect
server, an MLflow tracking server and a process worker for the `cpu` and the `gpu` pool, each worker in
its own clone of a bare git remote. Nothing passes through a shared folder: only git, the DVC remote and
the MLflow server. Deployed with `prefect --no-prompt deploy --all`, as a user would; models are tiny.
"""

from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.integration.cluster import (
    COMMIT_AS,
    ESCRAG,
    PREFECT,
    Cluster,
    WebhookReceiver,
    make_project,
    start_cluster,
)
from tests.integration.project_copy import git
from tests.integration.tiny_models import TINY_RUN, save_tiny_policy

pytestmark = pytest.mark.slow

DEPLOYMENTS = {"retrain/retrain": "cpu", "train/reward-model": "gpu", "train/policy": "gpu"}
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
KN = {"text": "Breathe slowly together.", "strategy": "Information", "stage": "any", "title": "t", "source": "s"}


@pytest.fixture(scope="module")
def hook():
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, repo_root, hook) -> Cluster:
    tmp = tmp_path_factory.mktemp("cluster")
    tiny = save_tiny_policy(tmp / "tiny-policy")
    project = make_project(repo_root, tmp, {**TINY_RUN, "base_model": {"source": str(tiny)}})
    started = start_cluster(project, tmp / "services", ESCRAG_WEBHOOK_URL=hook.url)
    yield started
    started.run(*ESCRAG, "services", "stop", "--state-dir", str(started.state), check=False)


@pytest.fixture(scope="module")
def deployed(cluster) -> None:
    cluster.run(PREFECT, "--no-prompt", "deploy", "--all")


def _add_knowledge(cluster: Cluster, name: str) -> str:
    """`escrag data add` of one valid record; returns the new data version (md5)."""
    source = cluster.state / f"{name}.jsonl"
    source.write_text(json.dumps({"id": f"kn-{name}", **KN}) + "\n")
    result = cluster.escrag("data", "add", "knowledge", str(source))
    assert "emitted escrag.data.versioned" in result.stdout, result.stdout + result.stderr[-3000:]
    return yaml.safe_load((cluster.project / "data.dvc").read_text())["outs"][0]["md5"]


@pytest.fixture(scope="module")
def retrains(cluster, deployed) -> dict:
    """Two data changes, the second while the first retrain runs; nobody calls `escrag run`."""
    first_md5 = _add_knowledge(cluster, "calm-1")
    cluster.wait_for(
        lambda: [r for r in cluster.flow_runs("retrain/retrain") if r["state_type"] == "RUNNING"],
        180,
        "retrain to start",
    )
    second_md5 = _add_knowledge(cluster, "calm-2")
    most_running, second_states_while_first_ran = 0, set()
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline:
        runs = cluster.flow_runs("retrain/retrain")
        running = [r for r in runs if r["state_type"] == "RUNNING"]
        most_running = max(most_running, len(running))
        if len(runs) == 2 and runs[0]["state_type"] == "RUNNING":
            second_states_while_first_ran.add(runs[1]["state_name"])
        if len(runs) == 2 and all(r["state_type"] in TERMINAL for r in runs):
            break
        time.sleep(2)
    else:
        raise AssertionError("the two retrains did not finish within 20 minutes")
    return {"runs": runs, "md5s": [first_md5, second_md5], "most_running": most_running,
            "waiting": second_states_while_first_ran}  # fmt: skip


def test_deploy_puts_retrain_on_cpu_and_training_on_gpu(cluster, deployed):
    listed = cluster.run(PREFECT, "deployment", "ls").stdout
    for name in DEPLOYMENTS:
        assert name in listed
    deployments = {name: cluster.request(f"/deployments/name/{name}") for name in DEPLOYMENTS}
    assert {name: d["work_pool_name"] for name, d in deployments.items()} == DEPLOYMENTS
    retrain = deployments["retrain/retrain"]
    assert retrain["global_concurrency_limit"]["limit"] == 1
    assert [s["schedule"]["cron"] for s in retrain["schedules"]] == ["0 3 * * *"]
    assert cluster.request("/work_pools/gpu")["concurrency_limit"] == 1
    template = cluster.project / "configs/prefect/k8s-gpu-base-job-template.json"
    cluster.run(PREFECT, "work-pool", "create", "gpu-k8s", "--type", "kubernetes", "--base-job-template", str(template))
    stored = cluster.request("/work_pools/gpu-k8s")["base_job_template"]
    container = stored["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "{{ gpus }}"
    # pull steps come from prefect.yaml, not from the folder the deployment was made in
    assert all(str(cluster.project) not in json.dumps(d["pull_steps"]) for d in deployments.values())


def test_new_data_alone_retrains_and_registers_a_candidate_with_lineage(cluster, retrains):
    from mlflow import MlflowClient

    runs = retrains["runs"]
    assert [r["state_type"] for r in runs] == ["COMPLETED", "COMPLETED"]
    assert [r["name"] for r in runs] == [f"retrain-data-{m[:8]}" for m in retrains["md5s"]]
    assert [r["parameters"]["data_version"] for r in runs] == retrains["md5s"]
    assert {r["work_pool_name"] for r in runs} == {"cpu"}
    client = MlflowClient(tracking_uri=cluster.env["MLFLOW_TRACKING_URI"])
    # The tiny random policy fails the crisis suite, so it stays the challenger: its lineage is what counts.
    candidate = client.get_model_version_by_alias("escrag-policy", "challenger")
    assert candidate.tags["promotion.decision"] == "rejected" and "crisis suite" in candidate.tags["promotion.reason"]
    tags = client.get_run(candidate.run_id).data.tags
    assert tags["data.md5"] in retrains["md5s"]
    assert tags["dvc.artifacts/reward_model.md5"] and tags["base_model.hash"] and tags["index.table_version"]
    origin = cluster.project.parent / "origin.git"
    assert git(origin, "cat-file", "-t", tags["git.commit"]).strip() == "commit", "lineage names a shared commit"


def test_training_ran_as_subflows_on_the_gpu_pool(cluster, retrains):
    first = retrains["runs"][0]
    trains = cluster.flow_runs("train/reward-model")[:1] + cluster.flow_runs("train/policy")[:1]
    assert {r["parameters"]["data_version"] for r in trains} == {first["parameters"]["data_version"]}
    assert sorted(r["name"].split("-data-")[0] for r in trains) == ["train-reward_model", "train-sft+grpo"]
    for run in trains:
        assert run["work_pool_name"] == "gpu" and run["state_type"] == "COMPLETED"
        parent = cluster.request(f"/task_runs/{run['parent_task_run_id']}")
        assert parent["flow_run_id"] == first["id"], "a subflow of the retrain that started it"


def test_a_second_data_event_waits_for_the_running_retrain(retrains):
    first, second = retrains["runs"]
    assert retrains["most_running"] == 1
    assert retrains["waiting"] and "Running" not in retrains["waiting"]
    assert second["start_time"] >= first["end_time"]


def test_decision_is_a_flow_run_artifact_and_goes_to_the_webhook(cluster, retrains, hook):
    first = retrains["runs"][0]
    artifacts = cluster.request("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [first["id"]]}}})
    by_key = {a["key"]: a for a in artifacts}
    assert {"promotion-decision", "evaluation"} <= set(by_key)
    assert "MLflow run: http://127.0.0.1" in by_key["promotion-decision"]["data"]
    decisions = [m for m in hook.received if m["kind"] == "promotion"]
    assert [m["data_version"] for m in decisions] == retrains["md5s"]


def test_a_failing_stage_notifies_the_webhook(cluster, retrains, hook):
    """A revision whose base model cannot be built: the stage fails on the gpu worker, the webhook hears."""
    branch = f"escrag/runs/{retrains['runs'][-1]['name']}"
    head = git(cluster.project, "ls-remote", "origin", f"refs/heads/{branch}").split()[0]
    broken = cluster.state / "broken"
    git(cluster.state, "clone", "-q", str(cluster.project.parent / "origin.git"), str(broken))
    git(broken, "checkout", "-q", head)
    params = yaml.safe_load((broken / "params.yaml").read_text())
    params["base_model"]["source"] = str(cluster.state / "no-such-model")
    (broken / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    git(broken, *COMMIT_AS, "commit", "-qam", "a base model that does not exist")
    git(broken, "push", "-q", "origin", f"HEAD:refs/heads/{branch}-broken")
    parameters = {
        "stages": ["reward_model"],
        "branch": f"{branch}-broken",
        "git_rev": git(broken, "rev-parse", "HEAD").strip(),
    }
    cluster.run(PREFECT, "deployment", "run", "train/reward-model", "--params", json.dumps(parameters))
    failures = cluster.wait_for(lambda: [m for m in hook.received if m["kind"] == "failure"], 300, "failure webhook")
    assert failures[0]["state"] in {"Failed", "Crashed"} and failures[0]["flow"] == "train"
    assert "no-such-model" in failures[0]["error"], "the notification says what failed"
    (run,) = [r for r in cluster.flow_runs("train/reward-model") if r["parameters"]["branch"].endswith("-broken")]
    assert run["state_type"] in {"FAILED", "CRASHED"}


def test_every_started_process_is_stopped_by_pid(cluster):
    result = cluster.run(*ESCRAG, "services", "stop", "--state-dir", str(cluster.state))
    assert result.stdout.count("stopped") == len(cluster.pids) == 4
    from tasks.health import is_running

    assert not [pid for pid in cluster.pids if is_running(pid)]
