"""Editing a line of any module a stage runs makes `dvc status` name exactly the stages that run it.

On a copy of the project, every stage's inputs and outputs are stood in by placeholders and recorded in
dvc.lock (`dvc commit -f`); then each code file that any stage runs is edited in turn, and DVC's own
status must name exactly the stages whose traced code (tasks/stage_graph.py) holds that file.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tasks.stage_graph import stage_code
from tasks.stages import STAGES
from tests.conftest import REPO_ROOT
from tests.integration.project_copy import copy_project

DVC = str(Path(sys.executable).with_name("dvc"))


def _paths(items: list | None) -> Iterator[str]:
    for item in items or []:
        yield next(iter(item)) if isinstance(item, dict) else item


def _stand_in_for_every_input_and_output(root: Path) -> None:
    for stage in yaml.safe_load((root / "dvc.yaml").read_text())["stages"].values():
        for key in ("outs", "metrics", "plots", "deps"):
            for rel in _paths(stage.get(key)):
                path = root / rel
                if path.exists():
                    continue
                if path.suffix:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text("{}\n")
                else:
                    path.mkdir(parents=True)
                    (path / "placeholder").write_text("stand-in\n")


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_project(REPO_ROOT, tmp_path_factory.mktemp("graph"))
    _stand_in_for_every_input_and_output(root)
    subprocess.run([DVC, "commit", "-f", "-q"], cwd=root, check=True, capture_output=True)
    return root


def _stages_with_changed_deps(status: dict) -> set[str]:
    changed = set()
    for key, entries in status.items():
        if any("changed deps" in entry for entry in entries if isinstance(entry, dict)):
            changed.add(key.rsplit(":", 1)[-1])
    return changed


def test_editing_each_module_changes_exactly_the_stages_that_run_it(committed: Path) -> None:
    from dvc.repo import Repo

    runs = {name: stage_code(REPO_ROOT, fn) for name, fn in STAGES.items()}
    files = sorted(set().union(*runs.values()))
    mismatches = []
    with Repo(str(committed)) as repo:
        assert repo.status() == {}, "the stand-in lock should be clean before any edit"
        for rel in files:
            path = committed / rel
            original = path.read_bytes()
            path.write_bytes(original + (b"\n# edited\n" if rel.suffix == ".py" else b"\0"))
            try:
                changed = _stages_with_changed_deps(repo.status())
            finally:
                path.write_bytes(original)
            expected = {name for name, code in runs.items() if rel in code}
            if changed != expected:
                mismatches.append(
                    f"{rel}: dvc status names {sorted(changed)}, the stages that run it are {sorted(expected)}"
                )
    assert len(files) > 50
    assert not mismatches, "\n".join(mismatches)
    assert all(runs.values()), "every stage runs some code"
