"""Which GRPO checkpoint a re-run may resume from: only one the trainer finished writing."""

from __future__ import annotations

import json

from models.policy_training import last_checkpoint


def _checkpoint(root, step: int, state: str | None) -> None:
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"\0" * 8)
    if state is not None:
        (folder / "trainer_state.json").write_text(state)


def test_a_save_cut_short_is_never_resumed(tmp_path):
    _checkpoint(tmp_path, 2, json.dumps({"global_step": 2}))
    _checkpoint(tmp_path, 4, '{"global_st')  # a full disk cut the last file short
    _checkpoint(tmp_path, 6, None)  # killed before the last file
    _checkpoint(tmp_path, 8, json.dumps({"global_step": 6}))  # a state that is not this folder's
    assert last_checkpoint(tmp_path) == tmp_path / "checkpoint-2"


def test_no_folder_or_no_complete_checkpoint_means_a_fresh_start(tmp_path):
    assert last_checkpoint(tmp_path / "absent") is None
    _checkpoint(tmp_path, 2, "")
    assert last_checkpoint(tmp_path) is None


def test_the_newest_complete_checkpoint_wins(tmp_path):
    for step in (2, 10, 4):
        _checkpoint(tmp_path, step, json.dumps({"global_step": step}))
    assert last_checkpoint(tmp_path) == tmp_path / "checkpoint-10"
