"""Fault 1: `kill -9` of `escrag run` during GRPO. The trainer checkpoints every `grpo.checkpoint_steps`;
the next `escrag run` resumes from the last checkpoint (its MLflow curve starts after it, not at step 1),
ends at the same final step, registers one version only, and removes the checkpoints."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from models.policy_training import checkpoint_step, last_checkpoint
from tasks.project import Project
from tests.faults.conftest import escrag
from tests.integration.conftest import mlflow_client
from tests.integration.project_copy import tiny_project
from tests.integration.tiny_models import TINY_RUN

pytestmark = pytest.mark.slow

STEPS, EVERY = 6, 2


@pytest.fixture(scope="module")
def grpo_project(tmp_path_factory, repo_root):
    grpo = {**TINY_RUN["grpo"], "max_steps": STEPS, "checkpoint_steps": EVERY}
    return tiny_project(repo_root, tmp_path_factory, "fault-grpo", grpo=grpo)


def _checkpoints(root):
    return Project(root).state / "checkpoints"


def _wait_for_checkpoint(root, process, timeout_s: float = 1200) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        if list(_checkpoints(root).glob("grpo-*/checkpoint-*/trainer_state.json")):
            return True
        time.sleep(0.2)
    return False


def test_killed_grpo_resumes_from_its_checkpoint(grpo_project, fault):
    row = fault(1, "kill -9 of `escrag run` during GRPO", f"re-run resumes at the last checkpoint, ends at step "
                f"{STEPS}; nothing registered by the killed run; checkpoints removed")  # fmt: skip
    first = escrag(grpo_project, "run", start_new_session=True)  # its own group: Prefect's server dies with it
    assert _wait_for_checkpoint(grpo_project, first), first.communicate()[1][-4000:] if first.poll() else "none"
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate()
    [folder] = _checkpoints(grpo_project).glob("grpo-*")
    checkpoint = last_checkpoint(folder)
    at = checkpoint_step(checkpoint)
    assert at < STEPS, "the kill came after the last step: nothing left to resume"
    client = mlflow_client(grpo_project)
    assert not client.search_model_versions("name='escrag-policy'"), "a killed run registers nothing"
    assert not (grpo_project / "artifacts" / "policy").exists()

    again = escrag(grpo_project, "run")
    _, err = again.communicate(timeout=1800)
    assert again.returncode == 0, err[-4000:]
    run_id = json.loads((grpo_project / "artifacts" / "grpo" / "run.json").read_text())["mlflow_run_id"]
    steps = sorted(m.step for m in client.get_metric_history(run_id, "reward"))
    row.did = f"killed at {checkpoint.name}; re-run logged GRPO steps {steps}; {len(steps)} of {STEPS} trained again"
    assert steps == list(range(at + 1, STEPS + 1)), "the resumed run trains only the steps after the checkpoint"
    assert len(client.search_model_versions("name='escrag-policy'")) == 1
    assert not list(_checkpoints(grpo_project).glob("grpo-*")), "checkpoints removed"
