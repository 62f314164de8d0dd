"""dvc.yaml declares exactly the code each stage runs, as read from the source (tasks/stage_graph.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.stage_graph import code_cover, code_files, graph_problems, rewrite_code_deps, stage_code
from tasks.stages import STAGES
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("stage", list(STAGES))
def test_dvc_yaml_declares_every_file_the_stage_runs_and_no_other_code(stage: str) -> None:
    assert graph_problems(REPO_ROOT, stage, STAGES[stage]) == []


def test_a_stage_claims_only_the_functions_it_reaches_in_a_shared_module() -> None:
    sft, grpo = (stage_code(REPO_ROOT, STAGES[name]) for name in ("sft", "grpo"))
    assert Path("models/rewards/registry.py") in grpo and Path("models/rewards/registry.py") not in sft
    assert Path("models/safety/probes.npz") in grpo  # loaded from beside models/safety/probes.py


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_trace_follows_function_level_imports_and_module_code_but_not_unreached_functions(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "tasks/__init__.py": "",
            "tasks/stage.py": "from models import a\n\ndef run():\n    from models.b import f\n    return f()\n\n"
            "def other():\n    from models import c\n",
            "models/__init__.py": "",
            "models/a.py": "X = 1\n",
            "models/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from models import c\n\n"
            "def f():\n    return g()\n\ndef g():\n    from models import d\n",
            "models/c.py": "",
            "models/d.py": "",
        },
    )
    found = {str(p) for p in code_files(root, "tasks.stage", "run")}
    assert found == {"tasks/__init__.py", "tasks/stage.py", "models/__init__.py", "models/a.py", "models/b.py",
                     "models/d.py"}  # fmt: skip


def test_code_cover_uses_a_folder_only_when_every_file_in_it_runs(tmp_path: Path) -> None:
    root = _package(tmp_path, {"models/p/__init__.py": "", "models/p/x.py": "", "models/q/__init__.py": ""})
    (root / "models/q/unused.py").write_text("")
    files = {Path("models/p/__init__.py"), Path("models/p/x.py"), Path("models/q/__init__.py")}
    assert code_cover(root, files) == ["models/p", "models/q/__init__.py"]


def test_rewrite_keeps_data_deps_and_comments_and_replaces_code_deps() -> None:
    text = "stages:\n  a:\n    cmd: x\n    deps:\n      - data/d   # why\n      - models/old.py\n    outs:\n      - o\n"
    new = rewrite_code_deps(text, "a", ["models/new.py"])
    assert (
        new
        == "stages:\n  a:\n    cmd: x\n    deps:\n      - data/d   # why\n      - models/new.py\n    outs:\n      - o\n"
    )
