"""Data versions from the git history of `data.dvc`: list them, restore one, diff two by record id.

A data version is the md5 of `data/` in a committed `data.dvc` (the md5 of its DVC `.dir` manifest).
Record counts come from `data.dvc`'s `meta` (written by `escrag data add/import`) when that meta belongs
to the same md5 (another path, such as the retrain flow's version step, may change the md5 and keep an
older meta); otherwise they are counted from the DVC cache: the `.dir` manifest lists every file's md5,
and the cached files are read line by line. A version whose objects are not cached is fetched from the
default remote before a diff or a checkout.
"""

from __future__ import annotations

import json
import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from models.schema import DATASETS
from tasks import dvc_ops
from tasks.dvc_ops import cached_object, manifest

logger = logging.getLogger(__name__)

WORKSPACE = "workspace"


class VersionError(ValueError):
    """A version that cannot be found, is ambiguous, or cannot be restored exactly."""


@dataclass
class DataVersion:
    rev: str  # full git commit, or "workspace" for an uncommitted data.dvc
    date: str
    subject: str
    md5: str
    counts: dict[str, int] | None
    data_dvc: bytes

    @property
    def short(self) -> str:
        return self.rev if self.rev == WORKSPACE else self.rev[:8]


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True).stdout


def _parse(raw: bytes) -> tuple[str, dict[str, Any]]:
    doc = yaml.safe_load(raw) or {}
    outs = doc.get("outs") or [{}]
    return str(outs[0].get("md5", "")), doc.get("meta") or {}


def _files(cache: Path, md5: str) -> list[tuple[str, str, Path]] | None:
    """(dataset, relpath, cached file) of every *.jsonl of a version; None when any object is missing."""
    entries = manifest(cache, md5)
    if entries is None:
        return None
    out = []
    for e in entries:
        dataset = e["relpath"].split("/", 1)[0]
        if dataset in DATASETS and e["relpath"].endswith(".jsonl"):
            path = cached_object(cache, e["md5"])
            if not path.exists():
                return None
            out.append((dataset, e["relpath"], path))
    return out


def count_records(cache: Path, md5: str) -> dict[str, int] | None:
    """Records per dataset (non-blank lines of the cached files), or None when objects are missing."""
    files = _files(cache, md5)
    if files is None:
        return None
    counts = dict.fromkeys(DATASETS, 0)
    for dataset, _, path in files:
        with path.open("rb") as handle:
            counts[dataset] += sum(1 for line in handle if line.strip())
    return counts


def _version(cache: Path, rev: str, date: str, subject: str, raw: bytes) -> DataVersion:
    md5, meta = _parse(raw)
    counts = meta.get("records") if meta.get("md5") == md5 else None
    return DataVersion(rev, date, subject, md5, counts or count_records(cache, md5), raw)


def list_versions(root: Path) -> list[DataVersion]:
    """Every committed version of data.dvc, newest first; an uncommitted data.dvc comes first as 'workspace'."""
    cache = dvc_ops.cache_dir(root)
    log = _git(root, "log", "--format=%H%x1f%cI%x1f%s", "--", "data.dvc").decode()
    versions = []
    for line in filter(None, log.splitlines()):
        rev, date, subject = line.split("\x1f", 2)
        try:
            raw = _git(root, "show", f"{rev}:data.dvc")
        except subprocess.CalledProcessError:  # the commit deleted data.dvc
            continue
        versions.append(_version(cache, rev, date, subject, raw))
    current = root / "data.dvc"
    if current.exists() and (not versions or current.read_bytes() != versions[0].data_dvc):
        versions.insert(0, _version(cache, WORKSPACE, "", "uncommitted data.dvc", current.read_bytes()))
    return versions


def resolve(root: Path, spec: str) -> DataVersion:
    """A version by git revision (tried first), by md5 prefix, or 'workspace' (the current data.dvc)."""
    cache = dvc_ops.cache_dir(root)
    if spec == WORKSPACE:
        return _version(cache, WORKSPACE, "", "current data.dvc", (root / "data.dvc").read_bytes())
    try:
        rev = _git(root, "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}").decode().strip()
        raw = _git(root, "show", f"{rev}:data.dvc")
        info = _git(root, "log", "-1", "--format=%cI%x1f%s", rev).decode().strip().split("\x1f", 1)
        return _version(cache, rev, info[0], info[1] if len(info) > 1 else "", raw)
    except subprocess.CalledProcessError:
        pass
    matches = [v for v in list_versions(root) if v.md5.startswith(spec.lower())]
    md5s = sorted({v.md5 for v in matches})
    if not md5s:
        raise VersionError(f"{spec!r} is neither a git revision with data.dvc nor the md5 prefix of a data version")
    if len(md5s) > 1:
        raise VersionError(f"md5 prefix {spec!r} is ambiguous: {', '.join(md5s)}")
    return matches[0]


def _ensure_cached(root: Path, version: DataVersion) -> list[tuple[str, str, Path]]:
    cache = dvc_ops.cache_dir(root)
    files = _files(cache, version.md5)
    if files is None:
        logger.info("data version %s is not fully cached; fetching it from the remote", version.md5)
        try:
            dvc_ops.fetch_data(root, None if version.rev == WORKSPACE else version.rev)
        except Exception as exc:  # noqa: BLE001 - reported as the version being unavailable
            logger.warning("dvc fetch failed: %s", exc)
        files = _files(cache, version.md5)
    if files is None:
        raise VersionError(str(dvc_ops.unrestorable(root, version.md5)))
    return files


def records_by_id(root: Path, version: DataVersion) -> dict[str, dict[str, str]]:
    """dataset -> record id -> the record as canonical JSON (a record without an id is keyed file:line)."""
    out: dict[str, dict[str, str]] = {d: {} for d in DATASETS}
    for dataset, relpath, path in _ensure_cached(root, version):
        for n, line in enumerate(path.read_bytes().decode("utf-8").splitlines(), 1):
            if line.strip():
                record = json.loads(line)
                key = record.get("id") if isinstance(record.get("id"), str) else f"{relpath}:{n}"
                out[dataset][key] = json.dumps(record, sort_keys=True, ensure_ascii=False)
    return out


def diff(root: Path, a: DataVersion, b: DataVersion) -> dict[str, dict[str, list[str]]]:
    """dataset -> {added, removed, changed}: record ids, sorted, going from version a to version b."""
    ra, rb = records_by_id(root, a), records_by_id(root, b)
    return {
        d: {
            "added": sorted(rb[d].keys() - ra[d].keys()),
            "removed": sorted(ra[d].keys() - rb[d].keys()),
            "changed": sorted(k for k in ra[d].keys() & rb[d].keys() if ra[d][k] != rb[d][k]),
        }
        for d in DATASETS
    }


def verify(root: Path, md5: str) -> None:
    """Check that data/ holds exactly the files of version md5, byte for byte; raise VersionError if not."""
    try:
        wrong = dvc_ops.mismatched_files(root, md5)
    except dvc_ops.DataRestoreError as exc:
        raise VersionError(str(exc)) from None
    if wrong:
        raise VersionError(f"data/ does not match version {md5} after restore: {', '.join(wrong[:5])}")


def data_dvc_committed(root: Path) -> bool:
    """True when data.dvc in the work tree is the one committed at HEAD."""
    return subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "data.dvc"], cwd=root).returncode == 0


def checkout(root: Path, spec: str, *, force: bool = False) -> DataVersion:
    """Restore data/ (and data.dvc) to a version exactly, then verify every file's md5.

    Refuses, unless force, when data/ holds changes that the current data.dvc does not record. On failure
    data.dvc is put back as it was.
    """
    version = resolve(root, spec)
    if (root / "data").exists() and not force and not dvc_ops.data_is_current(root):
        raise VersionError("data/ has changes that data.dvc does not record; use --force to discard them")
    _ensure_cached(root, version)
    previous = (root / "data.dvc").read_bytes()
    (root / "data.dvc").write_bytes(version.data_dvc)
    try:
        dvc_ops.checkout_data(root)
        verify(root, version.md5)
    except BaseException:
        (root / "data.dvc").write_bytes(previous)
        raise
    logger.info("data/ restored to %s (%s)", version.md5, version.short)
    return version
