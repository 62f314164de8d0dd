"""Fault 9: hostile input to the commands that take a path, a name or a URI: `..` escapes, absolute paths
outside the project, symlinks out of it, registry URIs naming no model, a model folder without weights, a
params file or recipe that is not YAML. Each gets exit 2 and an error naming the argument, and the project
(files, git, data, registry) is byte for byte what it was."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli import main
from flows.cli_support import EXIT_BAD_INPUT
from tests.faults.conftest import project_files
from tests.integration.project_copy import git

pytestmark = pytest.mark.slow

OUTSIDE = "/tmp/escrag-fault-outside"


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file (the registry's SQLite store included) and git's view of the tree."""
    files = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in project_files(root)}
    return {**files, "git status": git(root, "status", "--porcelain"), "git head": git(root, "rev-parse", "HEAD")}


@pytest.fixture(scope="module")
def hostile(fault_project, tmp_path_factory) -> Iterator[dict[str, str]]:
    """Files the cases point at: a model folder without weights, a symlink out of the project, bad YAML."""
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "empty-model").mkdir()
    (tmp / "bad.yaml").write_text("compute: [cpu,\n  ::: not yaml")
    (tmp / "turns.json").write_text(json.dumps([{"speaker": "seeker", "text": "hello"}]))
    (tmp / "pairs.jsonl").write_text(json.dumps({"context": [{"speaker": "seeker", "text": "hi"}], "response": "Hi."}))
    link = fault_project / "artifacts" / "escape"
    link.symlink_to(tmp, target_is_directory=True)
    yield {"tmp": str(tmp), "dialogues": str(next((fault_project / "data" / "dialogues").glob("*.jsonl")))}
    link.unlink()


CASES = [  # (label, argv with {tmp}/{dialogues} filled in, what the error must name)
    ("`..` escape: preferences build --out", ["preferences", "build", "--out", "../../escaped.jsonl"], "--out"),
    ("absolute path outside: preferences build --out", ["preferences", "build", "--out", f"{OUTSIDE}/x.jsonl"],
     "--out"),
    ("a folder that is not new: reproduce --into", ["reproduce", "models:/escrag-policy/1", "--into", "{tmp}"],
     "--into {tmp}"),
    ("symlink out of the project: --out", ["preferences", "build", "--out", "artifacts/escape/x.jsonl"], "--out"),
    ("`..` in a data file name: data add --as", ["data", "add", "knowledge", "{tmp}/turns.json", "--as", "../../x"],
     "'../../x'"),
    ("unknown registry URI: lineage", ["lineage", "models:/no-such-model/1"], "models:/no-such-model/1"),
    ("unknown registry URI: evaluate --model", ["evaluate", "--model", "models:/escrag-policy/99", "--dialogues",
                                                "{dialogues}"], "models:/escrag-policy/99"),
    ("unknown registry URI: chat --model", ["chat", "--model", "models:/nope@champion", "--once", "{tmp}/turns.json"],
     "models:/nope@champion"),
    ("unknown registry URI: score --reward-model", ["score", "{tmp}/pairs.jsonl", "--reward-model",
                                                    "models:/escrag-reward/99"], "models:/escrag-reward/99"),
    ("unknown version: promote", ["promote", "99", "--reason", "fault suite"], "models:/escrag-policy/99"),
    ("unknown registry URI: serve --model", ["serve", "--model", "models:/nope/3"], "models:/nope/3"),
    ("model folder without weights: chat --model", ["chat", "--model", "{tmp}/empty-model"], "{tmp}/empty-model"),
    ("model folder without weights: score", ["score", "{tmp}/pairs.jsonl", "--reward-model", "{tmp}/empty-model"],
     "{tmp}/empty-model"),
    ("recipe that is not YAML", ["recipe", "{tmp}/bad.yaml"], "{tmp}/bad.yaml"),
    ("chat --once file that is not JSON", ["chat", "--once", "{tmp}/bad.yaml"], "{tmp}/bad.yaml"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "argv", "names"), CASES, ids=[c[0] for c in CASES])
def test_hostile_argument_is_refused_with_exit_2_and_changes_nothing(
    fault_project, hostile, fault, capsys, monkeypatch, label, argv, names
):
    monkeypatch.chdir(fault_project)  # relative paths resolve as a user in the project would type them
    row = fault(9, f"hostile input, {label}", "exit 2; stderr names the argument; every file, git, registry unchanged")
    argv = [a.format(**hostile) for a in argv]
    names = names.format(**hostile)
    before = snapshot(fault_project)
    code = main(["--project", str(fault_project), *argv])
    err = capsys.readouterr().err
    row.did = f"exit {code}: {err.strip().splitlines()[-1][:120] if err.strip() else '(no message)'}"
    assert code == EXIT_BAD_INPUT, err[-2000:]
    assert names in err, err[-2000:]
    assert snapshot(fault_project) == before
    assert not Path(OUTSIDE).exists()


def test_params_file_that_is_not_yaml_is_refused(fault_project, hostile, fault, capsys):
    row = fault(9, "hostile input, params.yaml that is not YAML: run", "exit 2 naming params.yaml; nothing changed")
    params = fault_project / "params.yaml"
    kept = params.read_bytes()
    try:
        shutil.copy(Path(hostile["tmp"]) / "bad.yaml", params)
        before = snapshot(fault_project)
        code = main(["--project", str(fault_project), "run"])
        err = capsys.readouterr().err
        row.did = f"exit {code}: {err.strip().splitlines()[0][:120]}"
        assert code == EXIT_BAD_INPUT and "params.yaml" in err, err[-2000:]
        assert snapshot(fault_project) == before
    finally:
        params.write_bytes(kept)
