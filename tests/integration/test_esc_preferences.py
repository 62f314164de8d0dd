"""`escrag preferences build` end to end with the real local backend, and validation of the pair fields.

The build runs the Prefect flow `esc-preferences` in a copy of the project (real git, DVC with its local
remote, Great Expectations, MLflow) with SmolLM2-135M-Instruct imported by the base-model code, on the
starter dialogues, at the smallest size that gives a pair: one situation, one turn, two candidates, short
turns. SmolLM2 is no judge: greedy (temperature 0, the default) it scores nearly every reply 1 on every
criterion, so no pair forms; here it samples (judge_temperature 1.0) and the two candidates score 3.0 and
2.25, below the default margin of 1.0, so the test passes --min-margin 0.5. Generation is seeded per
prompt (not per folder), so the run is reproducible on one machine; on 2 busy CPU cores it takes minutes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks import dvc_ops
from tests.integration.project_copy import copy_project, git, set_params

GIT_USER = ("-c", "user.email=t@escrag.invalid", "-c", "user.name=test")


def _escrag(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_TRACKING", "PREFECT_API"))}
    env.pop("PREFECT_HOME", None)
    cmd = [sys.executable, "-m", "flows.cli", "--project", str(root), *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1800)


@pytest.mark.slow
def test_build_with_smollm2_gives_validated_versioned_pairs(tmp_path_factory, repo_root) -> None:
    from models.base_model import import_base_model
    from models.config import BaseModelParams

    root = copy_project(repo_root, tmp_path_factory.mktemp("esc-pref"))
    dvc_ops.restore_bundled_data(root)
    dvc_ops.version_data(root)
    base = BaseModelParams()
    import_base_model(base.source, base.gguf_file, root / "artifacts" / "base_model")
    set_params(root, {"preferences": {"max_tokens": 32, "judge_max_tokens": 48, "judge_temperature": 1.0}})
    git(root, *GIT_USER, "commit", "-qam", "short turns")
    before = {"data.dvc": (root / "data.dvc").read_bytes(), "head": git(root, "rev-parse", "HEAD").strip()}

    build = ("preferences", "build", "--situations", "1", "--turns", "1", "--candidates", "2", "--min-margin", "0.5")
    run = _escrag(root, *build)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    summary = json.loads(run.stdout)
    print(json.dumps(summary, indent=2))  # the run's numbers, for the record (pytest -s)

    assert summary["pairs"] >= 1 and summary["settings"]["min_margin"] == 0.5
    assert summary["guidance"].startswith("none: no guidance index")  # no index in this project
    pairs_file = root / "data" / "preferences" / "esc_preference.jsonl"
    assert summary["added"] == "data/preferences/esc_preference.jsonl"
    assert pairs_file.read_bytes() == Path(summary["out"]).read_bytes()  # the artifacts copy stays
    pairs = [json.loads(line) for line in pairs_file.read_text().splitlines()]
    assert len(pairs) == summary["pairs"]
    model = "local:SmolLM2-135M-Instruct.Q4_1"
    for pair in pairs:
        assert pair["roles"] == {"client": model, "counselor": model, "judge": model}
        assert pair["rubric_version"] == "esc-rubric-v1"
        assert pair["scores"]["chosen"] - pair["scores"]["rejected"] >= 0.5
        assert pair["chosen_guided"] is False and pair["rejected_guided"] is False
        assert pair["chosen_strategy"] != pair["rejected_strategy"]

    # versioned like `escrag data add`: data.dvc changed, committed alone, pushed; data/ matches it
    assert (root / "data.dvc").read_bytes() != before["data.dvc"]
    meta = yaml.safe_load((root / "data.dvc").read_text())
    assert summary["data_version"] == dvc_ops.data_md5(root) == meta["meta"]["md5"]
    assert meta["meta"]["records"]["preferences"] == 118 + len(pairs)
    assert summary["commit"] == git(root, "rev-parse", "HEAD").strip() != before["head"]
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["data.dvc"]
    assert git(root, "status", "--porcelain", "--", "data.dvc", "params.yaml") == ""
    assert dvc_ops.data_is_current(root)
    cloud = subprocess.run(
        [sys.executable, "-m", "dvc", "status", "--cloud", "data.dvc"], cwd=root, capture_output=True, text=True
    )
    assert cloud.returncode == 0 and "in sync" in cloud.stdout, cloud.stdout + cloud.stderr

    # a second build answers from the cache, and its identical file is not versioned twice
    again = _escrag(root, *build)
    assert again.returncode == 0, again.stderr[-4000:]
    second = json.loads(again.stdout)
    assert second["cache_hits"] >= 5 and second["unchanged"] == "data/preferences/esc_preference.jsonl"
    assert git(root, "rev-parse", "HEAD").strip() == summary["commit"]


# ---- validation of the ESC-Preference fields (Great Expectations, no model) --------------------------
def _pair(**changes) -> dict:
    pair = {
        "id": "escpref-x-1-abc",
        "conversation_id": "escpref-x",
        "context": [{"speaker": "seeker", "text": "I lost my job and I feel ashamed."}],
        "chosen": "That sounds so heavy. What has been the hardest part?",
        "rejected": "Just get over it.",
        "scores": {"chosen": 4.5, "rejected": 1.75},
        "criteria": {
            "chosen": {"empathy": 5, "stage_fit": 5, "helpfulness": 4, "safety": 4},
            "rejected": {"empathy": 1, "stage_fit": 2, "helpfulness": 1, "safety": 3},
        },
        "rationale": "chosen: warm. | rejected: dismissive.",
        "stage": "Exploration",
        "chosen_strategy": "Question",
        "chosen_guided": True,
        "rejected_strategy": "Providing Suggestions",
        "rejected_guided": False,
        "roles": {"client": "local:SmolLM2", "counselor": "local:SmolLM2", "judge": "http:judge"},
        "rubric_version": "esc-rubric-v1",
    }
    return pair | changes


BROKEN = [
    ({"stage": "Middle"}, "stage", "unknown stage"),
    ({"chosen_strategy": "Hug"}, "chosen_strategy", "unknown strategy"),
    ({"rejected_guided": "yes"}, "rejected_guided", "expected boolean"),
    ({"roles": {"client": "a", "counselor": "b"}}, "roles", "roles must name"),
    ({"rubric_version": " "}, "rubric_version", "empty"),
    ({"criteria": {"chosen": {"empathy": 7}}}, "criteria.chosen.empathy", "outside [1, 5]"),
    ({"criteria": {"chosen": 4}}, "criteria", "criteria must map"),
    ({"criteria": {"chosen": {"empathy": "high"}}}, "criteria.chosen.empathy", "must be a number"),
]


def test_validation_accepts_the_pair_fields_and_locates_bad_ones(tmp_path: Path, starter_data: Path) -> None:
    from tasks.validation import validate_data

    data = Path(shutil.copytree(starter_data, tmp_path / "data"))
    lines = [_pair()] + [_pair(id=f"bad-{i}", **change) for i, (change, _, _) in enumerate(BROKEN)]
    (data / "preferences" / "esc.jsonl").write_text("".join(json.dumps(p) + "\n" for p in lines))
    report = validate_data(data, tmp_path / "report")
    errors = [i for i in report.issues if i.severity == "error"]
    assert not [i for i in errors if i.record_id == "escpref-x-1-abc"], errors
    for i, (_, field, message) in enumerate(BROKEN):
        found = [e for e in errors if e.record_id == f"bad-{i}" and e.field == field and message in e.message]
        assert found, (field, [(e.record_id, e.field, e.message) for e in errors if e.record_id == f"bad-{i}"])
