"""Fault 4: bytes flipped in one object of the DVC remote. A fresh clone's restore and `escrag data
checkout` detect it (the remote is verified on download), name the file, and write nothing to data/."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tasks import dvc_ops
from tests.integration.conftest import escrag_env
from tests.integration.project_copy import git

pytestmark = pytest.mark.slow


def _flip(path) -> None:
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_remote_object_is_detected_and_never_reaches_data(scenario, fault_project, fault, tmp_path):
    row = fault(4, "bytes flipped in one DVC remote object", "clone restore and data checkout fail naming the file; "
                "no data/ written; cache holds no corrupt object")  # fmt: skip
    line = (fault_project / "starter_data" / "knowledge" / "techniques.jsonl").read_text().splitlines()[0]
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({**json.loads(line), "id": "kn-fault-suite-1"}) + "\n")
    added = scenario.run("data", "add", "knowledge", str(extra))
    assert added.returncode == 0, added.stderr[-3000:]
    md5 = dvc_ops.data_md5(fault_project)
    entries = dvc_ops.manifest(dvc_ops.cache_dir(fault_project), md5)
    [target] = [e for e in entries if e["relpath"] == "knowledge/extra.jsonl"]
    _flip(dvc_ops.cached_object(fault_project / ".dvcstore" / "files" / "md5", target["md5"]))

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(fault_project), str(clone))
    subprocess.run([sys.executable, "-m", "dvc", "remote", "modify", "--local", "local", "url",
                    str(fault_project / ".dvcstore")], cwd=clone, check=True, env=escrag_env())  # fmt: skip
    restore = scenario.run("stage", "validate", cwd=clone)
    checkout = scenario.run("data", "checkout", md5[:12], cwd=clone)
    row.did = f"restore exit {restore.returncode}, checkout exit {checkout.returncode}: named knowledge/extra.jsonl"
    for result in (restore, checkout):
        assert result.returncode != 0
        assert "knowledge/extra.jsonl" in result.stderr and "corrupt" in result.stderr, result.stderr[-2000:]
    assert not (clone / "data").exists(), "nothing reaches data/"
    corrupt = dvc_ops.cached_object(dvc_ops.cache_dir(clone), target["md5"])
    assert not corrupt.exists(), "the refused object is not kept in the cache"
