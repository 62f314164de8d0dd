"""Faults 1, 2, 6 and 7, checked on what the scenario's runs left (tests/faults/scenario.py): a run refused
while no tracking server answers, runs killed in the data push, in the reward-model stage and in GRPO, and a
last run that finishes while a second one is refused."""

from __future__ import annotations

import signal

import lancedb
import pytest

from flows.cli_support import EXIT_BUSY, EXIT_UNAVAILABLE
from tests.faults.conftest import GRPO_STEPS
from tests.faults.scenario import PUSHED_BEFORE_KILL

pytestmark = pytest.mark.slow


def test_f07_unreachable_tracking_server_stops_the_run_before_any_work(scenario, fault):
    row = fault(7, "MLflow tracking server unreachable at `escrag run`; started again later", "exit 69 naming the "
                "URI before any stage; once the server is back, the next runs register each model once")  # fmt: skip
    seen, final = scenario.seen["no_server"], scenario.seen["final"]
    row.did = (
        f"refused in {seen['seconds']:.0f} s (exit {seen['code']}), nothing written; with the server back "
        f"(and 3 killed runs) {final['policies']} policy and {final['rewards']} reward version registered"
    )
    assert seen["code"] == EXIT_UNAVAILABLE, seen["stderr"][-3000:]
    assert scenario.tracking_uri in seen["stderr"] and "does not answer" in seen["stderr"]
    assert not seen["artifacts"] and seen["lock"] == scenario.committed, "nothing ran: no artifacts/, dvc.lock as is"
    assert scenario.final.returncode == 0, scenario.final.stderr[-4000:]
    assert (final["policies"], final["rewards"]) == (1, 1)


def test_f02_kills_in_the_push_and_the_reward_model_lose_and_corrupt_nothing(scenario, fault):
    row = fault(2, "kill -9 inside `dvc push` (an upload half done), then inside the reward-model stage",
                "no corrupt object in cache or remote; re-runs complete the push and the stage; `dvc status -c` "
                "clean; data.dvc checks out in a clone")  # fmt: skip
    push, reward, final = scenario.seen["push"], scenario.seen["reward_model"], scenario.seen["final"]
    clone = final["clone"]
    row.did = (
        f"push killed with {push['objects']} objects up, {push['missing']} entries missing, "
        f"{len(push['corrupt'])} corrupt; reward model killed mid-training, nothing registered; re-runs "
        f"finished both; `dvc status -c` missing {final['missing']}; clone checkout exit {clone['code']}"
    )
    assert push["code"] == -signal.SIGKILL, push["stderr"][-3000:]
    assert push["objects"] == PUSHED_BEFORE_KILL and push["missing"] > 0 and push["corrupt"] == []
    assert reward["failed"] is None, reward["failed"][-3000:]
    assert reward["missing"] == 0, "the next run finished the push"
    assert reward["lock"]["reward_model"] == scenario.committed["reward_model"], "the killed stage recorded nothing"
    assert reward["versions"] == 0
    assert scenario.final.returncode == 0, scenario.final.stderr[-4000:]
    assert final["corrupt"] == [] and final["missing"] == 0
    assert clone["code"] == 0 and clone["mismatched"] == [], clone["stderr"][-3000:]


def test_f01_killed_grpo_resumes_from_its_checkpoint(scenario, fault):
    row = fault(1, "kill -9 of `escrag run` during GRPO", f"re-run resumes at the last checkpoint, ends at step "
                f"{GRPO_STEPS}; nothing registered by the killed run; checkpoints removed")  # fmt: skip
    seen, final = scenario.seen["grpo"], scenario.seen["final"]
    assert seen["failed"] is None, seen["failed"][-3000:]
    assert scenario.final.returncode == 0, scenario.final.stderr[-4000:]
    steps = final["grpo_steps"]
    row.did = (
        f"killed at checkpoint-{seen['at']}; re-run logged GRPO steps {steps}; {len(steps)} of "
        f"{GRPO_STEPS} trained again"
    )
    assert 0 < seen["at"] < GRPO_STEPS, "the kill came after the last step: nothing left to resume"
    assert seen["policies"] == 0 and not seen["policy_folder"], "a killed run registers and writes no policy"
    assert seen["lock"]["grpo"] == scenario.committed["grpo"] and seen["rewards"] == 1
    assert steps == list(range(seen["at"] + 1, GRPO_STEPS + 1)), "the resumed run trains only the steps after it"
    assert final["checkpoints"] == [], "checkpoints removed"


def test_f06_second_run_refuses_while_the_first_holds_the_project(scenario, fault):
    row = fault(6, "two `escrag run` at once on one project", "2nd exits 75 naming the holder; 1st completes; "
                "dvc.lock, LanceDB table, registry whole")  # fmt: skip
    second, final = scenario.seen["second"], scenario.seen["final"]
    row.did = f"2nd refused in {second['seconds']:.0f} s (exit {second['code']}); 1st ran to the end"
    assert second["code"] == EXIT_BUSY, second["stderr"][-2000:]
    assert "is busy" in second["stderr"] and "pid" in second["stderr"] and "--wait" in second["stderr"]
    assert scenario.final.returncode == 0, scenario.final.stderr[-4000:]
    assert final["dvc_status"] in ("{}", ""), final["dvc_status"]  # every stage current: dvc.lock is whole
    table = lancedb.connect(str(scenario.root / "artifacts" / "index")).open_table("guidance")
    assert table.count_rows() > 0
    assert final["policies"] == 1, "one run registers one version"
