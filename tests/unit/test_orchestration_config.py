"""prefect.yaml, the flows and the Kubernetes template agree with each other (no server needed)."""

from __future__ import annotations

import json

import yaml

from flows.retrain import AFTER_TRAINING, BEFORE_TRAINING
from flows.train import TRAINING_DEPLOYMENTS, TRAINING_STAGES
from tasks.events import DATA_VERSIONED, data_resource
from tasks.stages import PIPELINE_ORDER


def _deployments(repo_root) -> dict[str, dict]:
    config = yaml.safe_load((repo_root / "prefect.yaml").read_text())
    return {d["name"]: d for d in config["deployments"]}, config


def test_training_deployments_in_prefect_yaml_are_the_ones_retrain_calls(repo_root):
    deployments, _ = _deployments(repo_root)
    for name, stages in TRAINING_DEPLOYMENTS.items():
        flow, deployment = name.split("/")
        assert deployments[deployment]["entrypoint"] == f"flows/{flow}.py:{flow}"
        assert deployments[deployment]["work_pool"]["name"] == "gpu"
        assert tuple(deployments[deployment]["parameters"]["stages"]) == stages


def test_every_stage_runs_exactly_once_across_the_pools():
    assert ("validate", *BEFORE_TRAINING, *TRAINING_STAGES, *AFTER_TRAINING) == PIPELINE_ORDER


def test_retrain_is_nightly_triggered_by_new_data_and_one_at_a_time(repo_root):
    deployments, config = _deployments(repo_root)
    retrain = deployments["retrain"]
    assert retrain["work_pool"]["name"] == "cpu" and retrain["concurrency_limit"] == 1
    assert retrain["schedules"][0]["cron"] == "0 3 * * *"
    (trigger,) = retrain["triggers"]
    assert trigger["expect"] == [DATA_VERSIONED]
    resource = data_resource("abc123.dir", "f" * 40)
    assert trigger["match"]["prefect.resource.id"].rstrip("*") in resource["prefect.resource.id"]
    for parameter, key in (("data_version", "escrag.data.md5"), ("git_rev", "escrag.git.commit")):
        assert key in resource and key in trigger["parameters"][parameter]
    # the pull step checks out the run's revision in the worker's own clone, never the deploying folder
    steps = json.dumps(config["pull"])
    assert "escrag worker prepare" in steps and "set_working_directory" in steps


def test_kubernetes_gpu_template_requests_gpus(repo_root):
    template = json.loads((repo_root / "configs/prefect/k8s-gpu-base-job-template.json").read_text())
    spec = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]
    resources = spec["containers"][0]["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == resources["requests"]["nvidia.com/gpu"] == "{{ gpus }}"
    assert template["variables"]["properties"]["gpus"]["default"] == 1
