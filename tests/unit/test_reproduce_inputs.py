"""`escrag reproduce` points a worktree's data.dvc and dvc.lock at the md5s the registered run recorded."""

from __future__ import annotations

from pathlib import Path

import yaml

from tasks.reproduce import point_inputs_at_recorded_md5s

DVC_YAML = {
    "stages": {
        "index": {"cmd": "escrag stage index", "outs": [{"artifacts/index": {"persist": True}}]},
        "evaluators": {
            "cmd": "escrag stage evaluators",
            "outs": ["artifacts/evaluators"],
            "metrics": [{"artifacts/reports/evaluators.json": {"cache": False}}],
        },
        "reward_model": {"cmd": "escrag stage reward_model", "outs": ["artifacts/reward_model"]},
    }
}


def _worktree(tmp_path: Path) -> Path:
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(DVC_YAML))
    lock = {"schema": "2.0", "stages": {"index": {"cmd": "x", "outs": [{"path": "artifacts/index", "md5": "old.dir"}]}}}
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock))
    (tmp_path / "data.dvc").write_text(yaml.safe_dump({"outs": [{"md5": "olddata.dir", "path": "data"}]}))
    return tmp_path


def test_recorded_md5s_replace_stale_ones_and_fill_missing_stages(tmp_path: Path) -> None:
    root = _worktree(tmp_path)
    tags = {"data.md5": "new.dir", "data.knowledge.md5": "kn.dir", "dvc.artifacts/index.md5": "idx.dir",
            "dvc.artifacts/evaluators.md5": "ev.dir"}  # fmt: skip
    restorable = point_inputs_at_recorded_md5s(root, tags)
    assert restorable == ["index", "evaluators"]  # reward_model's output was not recorded: it is re-run
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    assert lock["index"]["outs"] == [{"path": "artifacts/index", "hash": "md5", "md5": "idx.dir"}]
    assert lock["evaluators"]["outs"] == [{"path": "artifacts/evaluators", "hash": "md5", "md5": "ev.dir"}]
    assert yaml.safe_load((root / "data.dvc").read_text())["outs"][0]["md5"] == "new.dir"
    assert {"path": "data/knowledge", "hash": "md5", "md5": "kn.dir"} in lock["index"]["deps"]


def test_an_unversioned_run_keeps_the_committed_data_version(tmp_path: Path) -> None:
    root = _worktree(tmp_path)
    point_inputs_at_recorded_md5s(root, {"data.md5": "unversioned"})
    assert yaml.safe_load((root / "data.dvc").read_text())["outs"][0]["md5"] == "olddata.dir"
