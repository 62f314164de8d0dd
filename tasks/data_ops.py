"""Adding files to `data/`: check, stage, validate together with what is there, then version and commit.

Nothing in the project changes before the staged copy of `data/` plus the new files has passed
validation: the checks run on the sources and on a staging folder outside the project, and only then are
the files copied into `data/<dataset>/`, `dvc add data` and `dvc push` run, and `data.dvc` (with the
per-dataset record counts in its `meta`) committed to git, alone. The validation report goes to
`artifacts/data-add/`.

Sources and target names are checked in tasks.data_sources. A name that already exists in
`data/<dataset>/` is a no-op when the bytes are identical and a rejection otherwise. Under
`validate.pii_policy: redact`, e-mail addresses, phone numbers and street addresses in the new files'
text fields are replaced by [EMAIL], [PHONE], [ADDRESS] before validation (lines without personal data
keep their bytes); under `fail` they are rejected.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.schema import DATASETS
from tasks import dvc_ops, events
from tasks.data_sources import DataRejected, NewFile, redact_file
from tasks.jsonl_reader import DataError, read_jsonl
from tasks.project import Project

logger = logging.getLogger(__name__)

REPORT_DIR = "data-add"  # under artifacts/


@dataclass
class Plan:
    """What an add will do: the files to write, those already there, and the staged copy of data/."""

    verb: str
    files: list[NewFile]
    unchanged: list[NewFile] = field(default_factory=list)
    staging: Path | None = None
    records: dict[str, int] = field(default_factory=dict)  # target -> records in the new file
    counts: dict[str, int] = field(default_factory=dict)  # dataset -> records after the add
    report: Any = None  # the passing ValidationReport, logged to MLflow once the version exists

    def message(self, md5: str) -> str:
        added = ", ".join(f"{f.target} ({records(self.records[f.target])})" for f in self.files)
        sources = "\n".join(f"- {f.target}: {records(self.records[f.target])} from {f.source}" for f in self.files)
        totals = ", ".join(f"{d} {n}" for d, n in self.counts.items())
        return f"data: {self.verb} {added}\n\n{sources}\n\ndata md5 {md5}; records: {totals}\n"


def records(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


# ---- checks and staging -----------------------------------------------------------------------------
def _first_difference(a: Path, b: Path) -> int:
    """1-based number of the first line that differs (one file may simply be longer)."""
    n = 0
    with a.open("rb") as fa, b.open("rb") as fb:
        while True:
            la, lb = fa.readline(), fb.readline()
            n += 1
            if la != lb or not la:
                return n


def _split_existing(data_dir: Path, files: list[NewFile]) -> tuple[list[NewFile], list[NewFile]]:
    new, same = [], []
    for f in files:
        existing = data_dir / f.dataset / f.name
        if not existing.exists():
            new.append(f)
        elif existing.read_bytes() == f.path.read_bytes():
            same.append(f)
        else:
            line = _first_difference(existing, f.path)
            raise DataRejected(
                f.source,
                line,
                f"data/{f.target} already exists with different content (first difference at "
                f"line {line}); add it under another name with --as NAME",
            )
    return new, same


def prepare(project: Project, verb: str, files: list[NewFile], workdir: Path) -> Plan:
    """Check the new files and stage data/ plus them in workdir; raises DataRejected. Writes nothing in project."""
    settings = project.params.validate_
    if dvc_ops.restore_bundled_data(project.root):
        logger.info("data/ was missing: restored to the version in data.dvc")
    if not dvc_ops.data_is_current(project.root):
        raise DataRejected(
            "data",
            0,
            "data/ has changes that data.dvc does not record; version or undo them first "
            "(`escrag data checkout HEAD --force` restores the committed version)",
        )
    if settings.pii_policy == "redact":
        (workdir / "redacted").mkdir(parents=True, exist_ok=True)
        redacted = []
        for i, f in enumerate(files):
            copy = workdir / "redacted" / f"{i}-{f.name}"
            if n := redact_file(f.dataset, f.path, copy):
                logger.warning("%s: personal data redacted in %d records (pii_policy: redact)", f.source, n)
            redacted.append(NewFile(f.dataset, f.name, f.source, copy))
        files = redacted
    new, same = _split_existing(project.data, files)
    for f in same:
        logger.info("%s: identical to data/%s, nothing to add", f.source, f.target)
    plan = Plan(verb, new, same)
    for f in new:  # strict read first: a broken file is refused without running the suites
        try:
            plan.records[f.target] = len(read_jsonl(f.path, max_line_bytes=settings.max_line_bytes))
        except DataError as exc:
            raise DataRejected(f.source, exc.line, exc.reason, record_id=exc.record_id, field=exc.field) from None
    if new:
        plan.staging = workdir / "staging"
        shutil.copytree(project.data, plan.staging)
        for f in new:
            (plan.staging / f.dataset).mkdir(exist_ok=True)
            shutil.copyfile(f.path, plan.staging / f.dataset / f.name)
    return plan


def validate(project: Project, plan: Plan) -> dict[str, int]:
    """Validate the staged data/ (old and new files together); raises DataRejected with the first error."""
    from tasks.validation import validate_data

    assert plan.staging is not None
    settings = project.params.validate_
    shown = {str(plan.staging / f.dataset / f.name): f.shown for f in plan.files}
    report = validate_data(
        plan.staging,
        project.artifact(REPORT_DIR),
        pii_policy=settings.pii_policy,
        max_line_bytes=settings.max_line_bytes,
        text_max_chars=settings.text_max_chars,
        shown_as={**shown, str(plan.staging): "data"},
    )
    if not report.success:
        errors = [i for i in report.issues if i.severity == "error"]
        new_files = set(shown.values())
        first = min(errors, key=lambda i: (i.file not in new_files, i.file, i.line))
        more = (
            f"; {len(errors)} errors in all, see {report.report_json.with_name('report.html')}"
            if len(errors) > 1
            else ""
        )
        raise DataRejected(
            first.file, first.line, f"{first.message}{more}", record_id=first.record_id, field=first.field
        )
    plan.counts = {d: report.counts[d] for d in DATASETS}
    plan.report = report
    return plan.counts


def write(project: Project, plan: Plan) -> list[Path]:
    """Copy the staged new files into data/<dataset>/; returns the paths written."""
    assert plan.staging is not None
    written = []
    for f in plan.files:
        target = project.data / f.dataset / f.name
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(plan.staging / f.dataset / f.name, target)
        written.append(target)
    return written


def rollback(project: Project, written: list[Path], data_dvc: bytes) -> None:
    """Undo `write` (and a `dvc add`) after a later step failed."""
    for path in written:
        path.unlink(missing_ok=True)
    (project.root / "data.dvc").write_bytes(data_dvc)
    logger.warning("rolled back: removed %s and restored data.dvc", ", ".join(map(str, written)))


# ---- recording the version --------------------------------------------------------------------------
def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def write_meta(root: Path, md5: str, counts: dict[str, int]) -> None:
    """Record the per-dataset record counts of this md5 in data.dvc's `meta` (DVC keeps `meta` as is)."""
    import yaml

    path = root / "data.dvc"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["meta"] = {"md5": md5, "records": dict(counts)}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def commit(project: Project, message: str) -> str | None:
    """`git commit` data.dvc alone; returns the commit (None outside git or when data.dvc is unchanged)."""
    root = project.root
    if not _git_ok(root, "rev-parse", "--is-inside-work-tree"):
        logger.warning("%s is not a git work tree: data.dvc not committed", root)
        return None
    if not _git(root, "status", "--porcelain", "--", "data.dvc"):
        return None
    who = (
        [] if _git_ok(root, "config", "user.email") else ["-c", "user.name=escrag", "-c", "user.email=escrag@localhost"]
    )
    _git(root, "add", "--", "data.dvc")
    _git(root, *who, "commit", "-q", "-m", message, "--", "data.dvc")
    return _git(root, "rev-parse", "HEAD")


def _git_ok(root: Path, *args: str) -> bool:
    try:
        return bool(_git(root, *args))
    except (OSError, subprocess.CalledProcessError):
        return False


# ---- the whole sequence ----------------------------------------------------------------------------
def version(project: Project, plan: Plan) -> str:
    """`dvc add data` and the record counts in data.dvc's meta; returns the data md5."""
    md5 = dvc_ops.add_data(project.root)
    write_meta(project.root, md5, plan.counts)
    return md5


def push(project: Project, attempts: int = 3, delay_s: float = 2.0) -> int:
    """`dvc push` of data.dvc to the default remote, tried `attempts` times (remotes fail transiently)."""
    for attempt in range(1, attempts + 1):
        try:
            return dvc_ops.push_data(project.root)
        except Exception as exc:  # noqa: BLE001 - any remote error is retried, the last one raised
            if attempt == attempts:
                raise
            logger.warning("dvc push failed (%s), attempt %d of %d", exc, attempt, attempts)
            time.sleep(delay_s)
    return 0


@dataclass
class AddResult:
    plan: Plan
    md5: str | None = None
    commit: str | None = None
    pushed: int = 0
    event: str | None = None  # the escrag.data.versioned event id, when a Prefect server was told


@dataclass(frozen=True)
class Steps:
    """The callables `run_add` composes; the Prefect flow `data` passes its tasks instead."""

    prepare: Callable[..., Plan] = prepare
    validate: Callable[..., dict[str, int]] = validate
    write: Callable[..., list[Path]] = write
    version: Callable[..., str] = version
    push: Callable[..., int] = push
    commit: Callable[..., str | None] = commit


def run_add(project: Project, verb: str, files: list[NewFile], workdir: Path, steps: Steps | None = None) -> AddResult:
    """prepare → validate → write into data/ → version (dvc add + meta) → push → git commit data.dvc.

    Nothing changes in the project before validation passed; a failure of write, version or push puts
    data/ and data.dvc back as they were (objects already in the DVC cache stay: they are content-addressed).
    """
    steps = steps or Steps()
    plan = steps.prepare(project, verb, files, workdir)
    if not plan.files:
        return AddResult(plan)
    steps.validate(project, plan)
    data_dvc = (project.root / "data.dvc").read_bytes()
    written: list[Path] = []
    try:
        written = steps.write(project, plan)
        md5 = steps.version(project, plan)
        pushed = steps.push(project)
    except BaseException:
        rollback(project, written or [project.data / f.dataset / f.name for f in plan.files], data_dvc)
        raise
    result = AddResult(plan, md5, steps.commit(project, plan.message(md5)), pushed)
    _log_report(project, plan)
    result.event = events.announce_data_version(project.root, md5, result.commit, plan.counts)
    return result


def _log_report(project: Project, plan: Plan) -> None:
    """The Data Docs of the new version go to MLflow; the data is already safe, so a failure only warns."""
    from tasks.validation_log import log_validation_report

    try:
        log_validation_report(project, plan.report, f"data-{plan.verb}")
    except Exception as exc:  # noqa: BLE001
        logger.warning("validation report not logged to MLflow: %s", exc)
