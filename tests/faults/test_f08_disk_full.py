"""Fault 8: the disk fills during the index build and during a GRPO checkpoint save (a small tmpfs mounted
over the folder each one writes, filled up). The command stops with exit 74 naming the full disk; what it
left is whole or ignored by the next run (the LanceDB table keeps its last committed version; a checkpoint
cut short is never resumed), and once there is space the same command completes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli_support import EXIT_NO_SPACE
from models.policy_training import last_checkpoint
from tasks.project import Project
from tests.integration.project_copy import set_params

pytestmark = pytest.mark.slow

NEW_PASSAGES = 200


@pytest.fixture
def tmpfs() -> Iterator:
    """`mount(folder, bytes)`: a tmpfs of that size over `folder`, with its old contents copied in (the
    folder's own files stay untouched underneath). Unmounted at teardown."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(folder: Path, size: int) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        saved = folder.with_name(folder.name + ".before-mount")
        shutil.copytree(folder, saved)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
        mounted.append(folder)
        shutil.copytree(saved, folder, dirs_exist_ok=True)
        shutil.rmtree(saved)
        return folder

    yield mount
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(folder: Path, leave: int) -> Path:
    """A file that takes all but `leave` bytes of `folder`'s file system."""
    stat = os.statvfs(folder)
    filler = folder / "filler.bin"
    with filler.open("wb") as out:
        out.truncate(0)
        out.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return filler


def _table(project: Path):
    import lancedb

    return lancedb.connect(str(project / "artifacts" / "index")).open_table("guidance")


def _new_passages(project: Path, folder: Path) -> Path:
    template = json.loads((project / "data" / "knowledge" / "techniques.jsonl").read_text().splitlines()[0])
    rows = [{**template, "id": f"kn-disk-full-{i}", "text": f"{template['text']} (variant {i})"}
            for i in range(NEW_PASSAGES)]  # fmt: skip
    path = folder / "disk-full.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_full_disk_in_the_index_build_keeps_the_last_table_version(scenario, fault_project, fault, tmpfs, tmp_path):
    row = fault(
        8,
        "disk full during the index build (tmpfs over artifacts/index)",
        "exit 74; table keeps "
        "its last version, no partial rows; with space the re-run adds every passage, text index whole",
    )
    added = scenario.run("data", "add", "knowledge", str(_new_passages(fault_project, tmp_path)))
    assert added.returncode == 0, added.stderr[-3000:]
    before = _table(fault_project)
    rows, version, ids = before.count_rows(), before.version, set(before.to_arrow()["id"].to_pylist())
    lock = (fault_project / "dvc.lock").read_bytes()

    index = tmpfs(fault_project / "artifacts" / "index", 64 * 2**20)
    filler = _fill(index, leave=32 * 1024)
    full = scenario.run("stage", "index")
    after = _table(fault_project)
    kept = (after.count_rows(), set(after.to_arrow()["id"].to_pylist()))
    filler.unlink()
    again = scenario.run("stage", "index")
    table = _table(fault_project)
    row.did = (f"exit {full.returncode} ({full.stderr.strip().splitlines()[-1][:70]}); table kept {kept[0]} rows of "
               f"v{version}; re-run: {table.count_rows()} rows")  # fmt: skip
    assert full.returncode == EXIT_NO_SPACE and "no space left on device" in full.stderr, full.stderr[-3000:]
    assert kept == (rows, ids), "no partial rows: the table is its last committed version"
    assert (fault_project / "dvc.lock").read_bytes() == lock, "nothing recorded for the failed stage"
    assert again.returncode == 0, again.stderr[-3000:]
    knowledge = sum(len(f.read_text().splitlines()) for f in (fault_project / "data" / "knowledge").glob("*.jsonl"))
    assert table.count_rows() == knowledge >= rows + NEW_PASSAGES, "every passage of data/knowledge, once"
    assert table.index_stats("text_idx").num_unindexed_rows == 0, "the text index covers every row"


def _checkpoint_bytes(model: Path) -> int:
    """One GRPO checkpoint of this model, about: weights, Adam's two moments, the tokenizer files."""
    weights = (model / "model.safetensors").stat().st_size
    return 3 * weights + sum(p.stat().st_size for p in model.glob("*token*")) + 2**20


def test_full_disk_in_a_grpo_checkpoint_is_never_resumed(scenario, fault_project, fault, tmpfs):
    row = fault(
        8,
        "disk full during a GRPO checkpoint save (tmpfs over the checkpoints)",
        "exit 74; policy "
        "and dvc.lock untouched; the cut-short checkpoint is never resumed; with space the re-run completes",
    )
    project = Project(fault_project)
    policy, lock = _sha(project.artifact("policy") / "model.safetensors"), (fault_project / "dvc.lock").read_bytes()
    set_params(fault_project, {"grpo": {"checkpoint_steps": 1}})
    try:
        room = int(1.5 * _checkpoint_bytes(project.artifact("sft")))  # the first checkpoint fits, the second not
        checkpoints = tmpfs(project.state / "checkpoints", room)
        full = scenario.run("stage", "grpo")
        [folder] = checkpoints.glob("grpo-*")
        written = sorted(p.name for p in folder.glob("checkpoint-*"))
        trusted = last_checkpoint(folder)
        untouched = _sha(project.artifact("policy") / "model.safetensors") == policy
        subprocess.run(["mount", "-o", "remount,size=1g", str(checkpoints)], check=True)
        again = scenario.run("stage", "grpo")
    finally:
        subprocess.run(["git", "checkout", "params.yaml"], cwd=fault_project, check=True)
    resumed = [line for line in again.stderr.splitlines() if "GRPO resumes from" in line]
    row.did = (
        f"exit {full.returncode}; folders {written}, resumable: {trusted.name if trusted else 'none'}; "
        f"re-run exit {again.returncode}: {resumed[0].split('GRPO ')[-1] if resumed else 'from step 0'}"
    )
    assert full.returncode == EXIT_NO_SPACE and "no space left on device" in full.stderr, full.stderr[-3000:]
    assert untouched, "the policy folder is untouched"
    assert (fault_project / "dvc.lock").read_bytes() == lock
    assert trusted is None or trusted.name != written[-1], "the checkpoint cut short is not trusted"
    assert again.returncode == 0, again.stderr[-3000:]
    if trusted is not None:
        assert f"resumes from {trusted.name}" in resumed[0]
    assert not list(checkpoints.glob("grpo-*")), "checkpoints removed once the run is recorded"
