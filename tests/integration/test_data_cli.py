"""`escrag data`: import ESConv, add files, reject bad input without changing anything, list/restore/diff versions.

Real git, DVC (local remote) and Great Expectations in temporary project copies, driven through the CLI.
One prepared project (starter data versioned and pushed) is shared by the module and copied per test.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from models.records import load_records
from tasks import dvc_ops
from tests.conftest import SHARED_DATA, SHARED_ESCONV
from tests.integration.project_copy import copy_project, git, set_params

needs_esconv = pytest.mark.skipif(not SHARED_ESCONV.exists(), reason="../shared/data/esconv is not beside the project")


def escrag(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_TRACKING", "PREFECT_API"))}
    env.pop("PREFECT_HOME", None)
    cmd = [sys.executable, "-m", "flows.cli", "--project", str(root), *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def state(root: Path) -> dict[str, str | bytes]:
    dvc = subprocess.run([sys.executable, "-m", "dvc", "status"], cwd=root, capture_output=True, text=True)
    return {
        "git status": git(root, "status", "--porcelain"),
        "git head": git(root, "rev-parse", "HEAD"),
        "dvc status": dvc.stdout,
        "data.dvc": (root / "data.dvc").read_bytes(),
        "data/": tree_hash(root / "data"),
        ".dvcstore/": tree_hash(root / ".dvcstore"),
        ".dvc/cache": tree_hash(root / ".dvc" / "cache"),
    }


@pytest.fixture(scope="module")
def base(tmp_path_factory, repo_root) -> Path:
    """Starter data restored, cached and pushed; git clean."""
    root = copy_project(repo_root, tmp_path_factory.mktemp("data-base"))
    dvc_ops.restore_bundled_data(root)
    assert dvc_ops.version_data(root) == dvc_ops.data_md5(root)
    assert git(root, "status", "--porcelain") == ""
    return root


@pytest.fixture
def project(base, tmp_path) -> Path:
    return Path(shutil.copytree(base, tmp_path / "project", symlinks=True))


@pytest.fixture(scope="module")
def imported(base, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    if not SHARED_ESCONV.exists():
        pytest.skip("../shared/data/esconv is not beside the project")
    root = Path(shutil.copytree(base, tmp_path_factory.mktemp("data-imported") / "p", symlinks=True))
    return root, escrag(root, "data", "import", "esconv", str(SHARED_ESCONV))


@pytest.fixture(scope="module")
def rated(base, tmp_path_factory) -> tuple[Path, list[subprocess.CompletedProcess]]:
    """EPITOME, then DiaSafety, imported from ../shared/data into one project."""
    if not (SHARED_DATA / "epitome").exists() or not (SHARED_DATA / "diasafety").exists():
        pytest.skip("../shared/data/epitome and diasafety are not beside the project")
    root = Path(shutil.copytree(base, tmp_path_factory.mktemp("data-rated") / "p", symlinks=True))
    return root, [escrag(root, "data", "import", name, str(SHARED_DATA / name)) for name in ("epitome", "diasafety")]


KN = {"text": "Breathe slowly together.", "strategy": "Information", "stage": "any", "title": "t", "source": "s"}


def kn(rid: str, **changes) -> bytes:
    record = {"id": rid, **KN, **changes}
    return (json.dumps({k: v for k, v in record.items() if v is not None}) + "\n").encode()


# ---- import and versions ----------------------------------------------------------------------------
@needs_esconv
def test_import_esconv_versions_pushes_and_commits_data_dvc_alone(imported):
    root, result = imported
    assert result.returncode == 0, result.stderr
    assert "data/dialogues/esconv.jsonl: 1105 records" in result.stdout
    pairs = [json.loads(line) for line in (root / "data/preferences/esconv.jsonl").read_text().splitlines()]
    assert f"data/preferences/esconv.jsonl: {len(pairs)} records" in result.stdout
    assert {p["split"] for p in pairs} == {"train", "eval"}
    dialogues = (root / "data/dialogues/esconv.jsonl").read_text()
    assert "4481 Division St" not in dialogues and "[ADDRESS]" in dialogues, "ESConv PII is redacted on import"
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["data.dvc"]
    subject = git(root, "log", "-1", "--format=%s")
    assert "dialogues/esconv.jsonl (1105 records)" in subject and f"({len(pairs)} records)" in subject
    doc = yaml.safe_load((root / "data.dvc").read_text())
    md5 = doc["outs"][0]["md5"]
    names = ("knowledge", "dialogues", "preferences")
    starter = {name: len(load_records(root / "starter_data", name)) for name in names}
    assert doc["meta"] == {
        "md5": md5,
        "records": {
            "knowledge": starter["knowledge"],
            "dialogues": starter["dialogues"] + 1105,
            "preferences": starter["preferences"] + len(pairs),
            "ratings": 0,
        },
    }
    assert (root / ".dvcstore/files/md5" / md5[:2] / md5[2:]).exists(), "pushed to the remote"
    assert (
        "up to date"
        in subprocess.run(
            [sys.executable, "-m", "dvc", "status", "data.dvc"], cwd=root, capture_output=True, text=True
        ).stdout
    )


def test_import_ratings_versions_both_corpora(rated):
    root, (epitome, diasafety) = rated
    assert epitome.returncode == 0, epitome.stderr
    assert diasafety.returncode == 0, diasafety.stderr
    assert "repeated pairs rated differently" in epitome.stderr  # EPITOME's own duplicates, said out loud
    assert "3 pairs longer than 4000 characters skipped" in epitome.stderr
    assert "3 records with an empty context or response skipped" in diasafety.stderr
    records = {
        name: [json.loads(line) for line in (root / f"data/ratings/{name}.jsonl").read_text().splitlines()]
        for name in ("epitome", "diasafety")
    }
    assert f"data/ratings/epitome.jsonl: {len(records['epitome'])} records" in epitome.stdout
    assert len(records["epitome"]) == 3020 and len(records["diasafety"]) == 11206
    assert all(
        set(r["labels"]) == {"emotional_reactions", "interpretations", "explorations"} for r in records["epitome"]
    )
    assert {r["split"] for r in records["diasafety"]} == {"train", "eval", "test"}
    risk = [r for r in records["diasafety"] if r["split"] == "test" and "risk_ignorance" in r["labels"]]
    # DiaSafety test: 193 risk_ignorance replies, 94 unsafe; one safe reply is empty and skipped
    assert (len(risk), sum(r["labels"]["risk_ignorance"] for r in risk)) == (192, 94)
    by_post: dict[str, set[str]] = {}
    for r in records["epitome"]:
        by_post.setdefault(r["context"], set()).add(r["split"])
    assert all(len(splits) == 1 for splits in by_post.values()), "one seeker post, one split"
    doc = yaml.safe_load((root / "data.dvc").read_text())
    assert doc["meta"]["records"]["ratings"] == 3020 + 11206
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "log", "-2", "--format=%s").splitlines() == [
        "data: import ratings/diasafety.jsonl (11206 records)",
        "data: import ratings/epitome.jsonl (3020 records)",
    ]


def test_a_bad_rating_is_rejected_naming_file_record_and_field(project, tmp_path):
    src = tmp_path / "diasafety"
    src.mkdir()
    rows = [
        {"context": "I feel low.", "response": "I hear you.", "category": "Risk Ignorance", "label": "Safe"},
        {"context": "Nothing matters.", "response": "Cool.", "category": "Risk Ignorance", "label": "Maybe"},
    ]
    (src / "test.json").write_text(json.dumps(rows))
    before = state(project)
    result = escrag(project, "data", "import", "diasafety", str(src))
    assert result.returncode == 2, result.stdout + result.stderr
    reason = result.stderr.strip().splitlines()[-1]
    assert f"{src / 'test.json'}: record 2: field 'label'" in reason and "'Maybe'" in reason, reason
    assert state(project) == before


@needs_esconv
def test_reimport_is_a_no_op(imported, tmp_path):
    root = Path(shutil.copytree(imported[0], tmp_path / "p", symlinks=True))
    before = state(root)
    result = escrag(root, "data", "import", "esconv", str(SHARED_ESCONV))
    assert result.returncode == 0, result.stderr
    assert "nothing to add" in result.stdout
    assert state(root) == before


@needs_esconv
def test_versions_diff_and_checkout(imported, tmp_path):
    root = Path(shutil.copytree(imported[0], tmp_path / "p", symlinks=True))
    listed = json.loads(escrag(root, "data", "versions", "--json").stdout)
    assert [v["counts"]["dialogues"] for v in listed] == [1171, 66]
    new, old = listed[0]["md5"], listed[1]["md5"]

    diff = json.loads(escrag(root, "data", "diff", "HEAD~1", "HEAD", "--json").stdout)["datasets"]
    assert len(diff["dialogues"]["added"]) == 1105 and not diff["dialogues"]["removed"]
    assert diff["knowledge"] == {"added": [], "removed": [], "changed": []}

    result = escrag(root, "data", "checkout", "HEAD~1")
    assert result.returncode == 0, result.stderr
    assert dvc_ops.data_md5(root) == old and not (root / "data/dialogues/esconv.jsonl").exists()
    assert tree_hash(root / "data") == tree_hash(root / "starter_data"), "restored byte for byte"
    result = escrag(root, "data", "checkout", new[:8])  # by md5 prefix
    assert result.returncode == 0, result.stderr
    assert dvc_ops.data_md5(root) == new and git(root, "status", "--porcelain") == ""
    assert escrag(root, "data", "checkout", "nosuchversion").returncode == 2


def test_diff_reports_changed_and_removed_records(project):
    (project / "data/knowledge/extra.jsonl").write_bytes(kn("kn-new-1"))
    crisis = project / "data/knowledge/crisis.jsonl"
    lines = crisis.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    crisis.write_text(json.dumps({**first, "title": "Changed"}) + "\n" + "".join(lines[2:]))
    dvc_ops.version_data(project)
    diff = json.loads(escrag(project, "data", "diff", "HEAD", "--json").stdout)["datasets"]["knowledge"]
    assert diff["added"] == ["kn-new-1"]
    assert diff["changed"] == [first["id"]]
    assert diff["removed"] == [json.loads(lines[1])["id"]]


def assert_data_docs_logged(root: Path, md5: str) -> None:
    """The passing validation of the new version is in MLflow, with its Data Docs, under the new data md5."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / '.mlflow' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("escrag")
    runs = client.search_runs([experiment.experiment_id], "tags.`escrag.stage` = 'data-add'")
    assert [r.data.tags["data.md5"] for r in runs] == [md5]
    assert runs[0].data.tags["validation.success"] == "true"
    assert runs[0].data.metrics["validation.knowledge"] > 0
    logged = {a.path for a in client.list_artifacts(runs[0].info.run_id, "validation")}
    assert {"validation/report.html", "validation/data_docs"} <= logged
    docs = {a.path for a in client.list_artifacts(runs[0].info.run_id, "validation/data_docs")}
    assert "validation/data_docs/index.html" in docs


# ---- add ----------------------------------------------------------------------------------------------
def test_add_versions_pushes_and_commits(project, tmp_path):
    new = tmp_path / "calm.jsonl"
    new.write_bytes(kn("kn-calm-1") + kn("kn-calm-2"))
    result = escrag(project, "data", "add", "knowledge", str(new))
    assert result.returncode == 0, result.stderr
    assert (project / "data/knowledge/calm.jsonl").read_bytes() == new.read_bytes()
    assert git(project, "status", "--porcelain") == ""
    assert git(project, "show", "--name-only", "--format=", "HEAD").split() == ["data.dvc"]
    assert git(project, "log", "-1", "--format=%s").strip() == "data: add knowledge/calm.jsonl (2 records)"
    md5 = dvc_ops.data_md5(project)
    assert (project / ".dvcstore/files/md5" / md5[:2] / md5[2:]).exists()
    assert_data_docs_logged(project, md5)
    # adding the same bytes again is a no-op
    before = state(project)
    again = escrag(project, "data", "add", "knowledge", str(new))
    assert again.returncode == 0 and "nothing to add" in again.stdout
    assert state(project) == before


def test_redact_policy_redacts_before_versioning(project, tmp_path):
    set_params(project, {"validate": {"pii_policy": "redact"}})
    git(project, "commit", "-qam", "redact")
    new = tmp_path / "call.jsonl"
    new.write_bytes(kn("kn-call-1", text="Call me on 415-555-0133 whenever it gets too much."))
    result = escrag(project, "data", "add", "knowledge", str(new))
    assert result.returncode == 0, result.stderr
    assert "[PHONE]" in (project / "data/knowledge/call.jsonl").read_text()
    assert git(project, "status", "--porcelain") == ""


def test_a_failed_push_rolls_back_data_and_data_dvc(project, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the remote folder should be")
    subprocess.run(
        [sys.executable, "-m", "dvc", "remote", "modify", "local", "url", str(blocker)], cwd=project, check=True
    )
    git(project, "commit", "-qam", "unreachable remote")
    before = {k: v for k, v in state(project).items() if k != ".dvc/cache"}  # new objects may stay in the cache
    new = tmp_path / "lost.jsonl"
    new.write_bytes(kn("kn-lost-1"))
    result = escrag(project, "data", "add", "knowledge", str(new))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rolled back" in result.stderr
    assert {k: v for k, v in state(project).items() if k != ".dvc/cache"} == before


def _symlink_out(src: Path) -> list[str]:
    outside = src.parent / "outside.jsonl"
    outside.write_bytes(kn("kn-out-1"))
    folder = src / "folder"
    folder.mkdir()
    (folder / "link.jsonl").symlink_to(outside)
    return [str(folder)]


BAD = {  # case -> (file name, content, expected words in the reason)
    "malformed json": ("a.jsonl", kn("kn-a-1") + b'{"id": "kn-a-2", "text": \n', "malformed JSON"),
    "wrong type": ("a.jsonl", kn("kn-a-1", text=5), "expected string"),
    "missing field": ("a.jsonl", kn("kn-a-1", source=None), "required field is missing"),
    "unknown strategy": ("a.jsonl", kn("kn-a-1", strategy="Lecturing"), "unknown strategy"),
    "unknown stage": ("a.jsonl", kn("kn-a-1", stage="Denial"), "unknown stage"),
    "duplicate id": ("a.jsonl", kn("kn-a-1") + kn("kn-a-1"), "duplicate id"),
    "duplicate of existing id": ("a.jsonl", kn("kn-crisis-0001"), "data/knowledge/crisis.jsonl"),
    "personal data": ("a.jsonl", kn("kn-a-1", text="Write to me at jo@example.com."), "personal data"),
    "non-utf8": ("a.jsonl", kn("kn-a-1").replace(b"slowly", b"slow\xffly"), "invalid UTF-8"),
    "empty file": ("a.jsonl", b"", "file is empty"),
    "binary file": ("a.jsonl", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
    "20 MB line": ("a.jsonl", b'{"id": "kn-big", "text": "' + b"a" * 20_000_000 + b'"}\n', "over the limit"),
    "collision": ("crisis.jsonl", kn("kn-a-1"), "already exists with different content"),
    "symlink outside": ("link.jsonl", _symlink_out, "outside the folder being added"),
    "escaping name": ("a.jsonl", kn("kn-a-1"), "target name '../x.jsonl'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_rejected_and_nothing_changes(case, project, tmp_path):
    name, content, expected = BAD[case]
    src = tmp_path / "src"
    src.mkdir()
    if callable(content):
        args = content(src)
        shown = src / "folder" / name
    else:
        shown = src / name
        shown.write_bytes(content)
        args = [str(shown)] + (["--as", "../x.jsonl"] if case == "escaping name" else [])
    before = state(project)
    result = escrag(project, "data", "add", "knowledge", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    reason = result.stderr.strip().splitlines()[-1]
    assert reason.startswith("escrag data add: rejected"), reason
    assert re.search(re.escape(str(shown)) + r":\d+: ", reason), reason
    assert expected in reason, reason
    assert state(project) == before


@pytest.mark.slow
def test_add_through_the_prefect_flow(project, tmp_path):
    new = tmp_path / "flow.jsonl"
    new.write_bytes(kn("kn-flow-1"))
    result = escrag(project, "data", "add", "knowledge", str(new), "--flow")
    assert result.returncode == 0, result.stderr
    assert "data/knowledge/flow.jsonl: 1 record " in result.stdout
    assert git(project, "status", "--porcelain") == ""
    assert git(project, "log", "-1", "--format=%s").strip() == "data: add knowledge/flow.jsonl (1 record)"


# ---- source rules, without the CLI ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../x.jsonl", "a/b.jsonl", "/abs.jsonl", ".hidden.jsonl", "x.json", "..", ""])
def test_target_names_must_stay_inside_the_dataset_folder(name):
    from tasks.data_sources import DataRejected, check_name

    with pytest.raises(DataRejected, match="target name"):
        check_name(name, "src.jsonl")
    assert check_name("esconv-2.v1.jsonl", "src.jsonl") == "esconv-2.v1.jsonl"


def test_a_symlink_inside_the_folder_is_accepted(tmp_path):
    from tasks.data_sources import collect_sources

    (tmp_path / "real.jsonl").write_bytes(kn("kn-r-1"))
    (tmp_path / "alias.jsonl").symlink_to(tmp_path / "real.jsonl")
    files = collect_sources("knowledge", [tmp_path])
    assert [(f.name, f.path) for f in files] == [
        ("alias.jsonl", tmp_path / "real.jsonl"),
        ("real.jsonl", tmp_path / "real.jsonl"),
    ]


def test_redaction_rewrites_only_lines_with_personal_data(tmp_path):
    from tasks.data_sources import redact_file

    clean = b'{"id":"kn-1",  "text": "spacing kept"}\n'
    src, dst = tmp_path / "src.jsonl", tmp_path / "dst.jsonl"
    src.write_bytes(clean + kn("kn-2", text="Mail me: jo@example.com") + b"not json\n")
    assert redact_file("knowledge", src, dst) == 1
    lines = dst.read_bytes().splitlines(keepends=True)
    assert lines[0] == clean and lines[2] == b"not json\n"
    assert json.loads(lines[1])["text"] == "Mail me: [EMAIL]"
