"""Real DVC: restoring a fresh clone's data, versioning and pushing to the local remote."""

from __future__ import annotations

import json

import yaml

from tasks import dvc_ops
from tests.integration.project_copy import copy_project


def test_fresh_copy_restores_data_matching_data_dvc(tmp_path, repo_root):
    root = copy_project(repo_root, tmp_path)
    assert not (root / "data").exists()
    assert dvc_ops.restore_bundled_data(root)
    committed = dvc_ops.data_md5(root)
    assert dvc_ops.version_data(root) == committed, "bundled starter data must match data.dvc"
    assert dvc_ops.restore_bundled_data(root) is False


def test_changed_data_gets_a_new_version_and_is_pushed(tmp_path, repo_root):
    root = copy_project(repo_root, tmp_path)
    dvc_ops.restore_bundled_data(root)
    before = dvc_ops.version_data(root)
    extra = {
        "id": "kn-extra-1",
        "text": "Offer a glass of water and a slow breath together.",
        "strategy": "Providing Suggestions",
        "stage": "Action",
        "title": "Slow down",
        "source": "test",
    }
    (root / "data" / "knowledge" / "extra.jsonl").write_text(json.dumps(extra) + "\n")
    after = dvc_ops.version_data(root)
    assert after != before
    assert yaml.safe_load((root / "data.dvc").read_text())["outs"][0]["md5"] == after
    pushed = root / ".dvcstore" / "files" / "md5" / after[:2] / after[2:]
    assert pushed.exists(), "the new directory manifest must be in the remote"


def test_checkout_makes_data_from_the_bundle_when_no_cache_or_remote_has_it(tmp_path, repo_root):
    root = copy_project(repo_root, tmp_path)  # nothing cached, nothing on the copy's remote
    dvc_ops.checkout_data(root)
    assert dvc_ops.data_is_current(root)
