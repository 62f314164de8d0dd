"""DVC operations: data versioning, per-stage up-to-date checks and lock commits, md5 look-ups."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _repo(root: Path) -> Iterator[Any]:
    """A DVC repo opened from inside its root: DVC resolves stage and target paths against the cwd."""
    from dvc.repo import Repo

    previous = Path.cwd()
    os.chdir(root)
    try:
        with Repo(str(root)) as repo:
            yield repo
    finally:
        os.chdir(previous)


def read_yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}


def data_md5(root: Path) -> str | None:
    """The md5 of `data/` recorded in `data.dvc`: escrag's data version."""
    outs = read_yaml(root / "data.dvc").get("outs", [])
    return outs[0]["md5"] if outs else None


def lock_entry(root: Path, stage: str) -> dict[str, Any]:
    """The `dvc.lock` entry of a stage (deps, params, outs), or {} if it never ran."""
    return read_yaml(root / "dvc.lock").get("stages", {}).get(stage, {})


def lock_out_md5(root: Path, stage: str) -> dict[str, str]:
    """path -> md5 of each out of a stage, from `dvc.lock`."""
    return {o["path"]: o["md5"] for o in lock_entry(root, stage).get("outs", [])}


def lock_dep_md5(root: Path, stage: str) -> dict[str, str]:
    """path -> md5 of each dep of a stage, from `dvc.lock`."""
    return {d["path"]: d["md5"] for d in lock_entry(root, stage).get("deps", [])}


def version_data(root: Path) -> str:
    """`dvc add data` and push it to the default remote; returns the data md5."""
    md5 = add_data(root)
    logger.info("data version %s (%s files pushed)", md5, push_data(root))
    return md5


def stage_is_current(root: Path, stage: str) -> bool:
    """True when the stage's deps, params and outs match `dvc.lock`: nothing to reproduce."""
    with _repo(root) as repo:
        return not repo.status(targets=[stage])


def commit_stage(root: Path, stage: str) -> None:
    """Record the stage's deps, params and outs in `dvc.lock` after it ran in-process."""
    with _repo(root) as repo:
        repo.commit(stage, force=True)


class DataRestoreError(RuntimeError):
    """`data/` cannot be made to match `data.dvc`: objects are missing, or corrupt in the remote."""


def cached_object(cache: Path, oid: str) -> Path:
    return cache / oid[:2] / oid[2:]


def manifest(cache: Path, md5: str) -> list[dict[str, str]] | None:
    """The `.dir` manifest [{md5, relpath}] of a data version, or None when it is not in the cache."""
    path = cached_object(cache, md5)
    return json.loads(path.read_bytes()) if path.exists() else None


def mismatched_files(root: Path, md5: str) -> list[str]:
    """The files of data/ that differ from version md5 (missing, extra or other bytes), by md5 of their
    bytes against the cached manifest: DVC's own status can call a partly checked-out folder current."""
    dir_object = cached_object(cache_dir(root), md5)
    if not dir_object.exists() or hashlib.md5(dir_object.read_bytes()).hexdigest() != md5.removesuffix(".dir"):
        raise DataRestoreError(f"data version {md5}: its manifest is missing from the DVC cache or corrupt")
    expected = {e["relpath"]: e["md5"] for e in json.loads(dir_object.read_bytes())}
    data = root / "data"
    actual = {
        p.relative_to(data).as_posix(): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(data.rglob("*"))
        if p.is_file()
    }
    return sorted(k for k in expected.keys() | actual.keys() if expected.get(k) != actual.get(k))


def unrestorable(root: Path, md5: str) -> DataRestoreError:
    """The error for a data version whose objects the cache lacks after a fetch, naming the files. The
    remote is verified on download (`verify = true` in .dvc/config): a corrupt object is refused there."""
    cache = cache_dir(root)
    entries = manifest(cache, md5)
    missing = (
        [e["relpath"] for e in entries if not cached_object(cache, e["md5"]).exists()]
        if entries is not None
        else [f"the manifest {md5}"]
    )
    return DataRestoreError(
        f"data version {md5}: {len(missing)} file(s) are missing from the DVC cache and the remote's copy is "
        f"missing or corrupt (refused by verification): {', '.join(missing[:5])}; nothing was written to data/"
    )


def restore_bundled_data(root: Path) -> bool:
    """On a fresh clone, materialise `data/` so that it matches `data.dvc`.

    Tries the DVC cache and default remote first; falls back to the starter data bundled in git when that
    is the version `data.dvc` records. Anything else raises DataRestoreError naming the files: a corrupt
    or missing remote object never turns into different data. Returns True when `data/` was created.
    """
    data = root / "data"
    if data.exists():
        return False
    try:
        with _repo(root) as repo:
            repo.pull(targets=["data.dvc"])
        if data.exists() and not mismatched_files(root, data_md5(root) or "?"):
            logger.info("data/ restored from the DVC remote")
            return True
    except Exception as exc:  # noqa: BLE001 - any remote failure falls back to the bundled copy
        logger.info("no DVC copy of data/ (%s); trying the bundled starter data", type(exc).__name__)
    shutil.rmtree(data, ignore_errors=True)  # a partial restore (objects refused by verification) is never used
    if not _data_from_bundle(root):
        raise unrestorable(root, data_md5(root) or "?")
    return True


def _copy_bundle(root: Path) -> bool:
    """Copy the starter data bundled in git to `data/` and into the DVC cache; True when it is the version
    data.dvc records. data.dvc itself is left byte for byte as it was (DVC's status cannot tell a bundle
    from the recorded version while that version's objects are not cached, so the md5s are compared)."""
    shutil.copytree(root / "starter_data", root / "data")
    record = root / "data.dvc"
    recorded, recorded_md5 = record.read_bytes(), data_md5(root)
    try:
        with _repo(root) as repo:
            repo.commit("data.dvc", force=True)  # caches the bundle; rewrites data.dvc with its md5
        return data_md5(root) == recorded_md5
    finally:
        record.write_bytes(recorded)


def data_is_current(root: Path) -> bool:
    """True when `data/` holds exactly what `data.dvc` records (`dvc status data.dvc` is clean)."""
    with _repo(root) as repo:
        return not repo.status(targets=["data.dvc"])


def cache_dir(root: Path) -> Path:
    """The local DVC cache folder of md5 objects (`.dvc/cache/files/md5` unless configured elsewhere)."""
    with _repo(root) as repo:
        return Path(repo.cache.local.path)


def fetch_data(root: Path, rev: str | None = None) -> None:
    """Fetch the objects of `data.dvc` (at git revision `rev`, or the workspace) from the default remote."""
    with _repo(root) as repo:
        repo.fetch(targets=["data.dvc"], revs=[rev] if rev else None)


def checkout_data(root: Path) -> None:
    """Make `data/` match `data.dvc` exactly (extra files removed), pulling missing objects from the remote.

    When the remote lacks them too and `data.dvc` records the starter data bundled in git (a project
    that never versioned data of its own), `data/` is made from that bundle.
    """
    with _repo(root) as repo:
        try:
            repo.checkout(targets=["data.dvc"], force=True)
            return
        except Exception as exc:  # noqa: BLE001 - DVC raises CheckoutError when objects are not cached
            logger.info("checkout from the cache failed (%s); pulling from the remote", type(exc).__name__)
        try:
            repo.pull(targets=["data.dvc"], force=True)
            return
        except Exception as exc:  # noqa: BLE001 - re-raised below unless the bundle is what data.dvc records
            pull_error = exc
    if not _data_from_bundle(root):
        raise unrestorable(root, data_md5(root) or "?") from pull_error


def _data_from_bundle(root: Path) -> bool:
    """Replace `data/` with the starter bundle when that is what `data.dvc` records; else keep `data/`."""
    data, aside = root / "data", root / ".data-before-bundle"
    shutil.rmtree(aside, ignore_errors=True)
    if data.exists():
        data.rename(aside)  # set aside, not deleted: it comes back when the bundle is not the version
    if _copy_bundle(root):
        shutil.rmtree(aside, ignore_errors=True)
        return True
    shutil.rmtree(data)
    if aside.exists():
        aside.rename(data)
    return False


def add_data(root: Path) -> str:
    """`dvc add data` (cache the files, rewrite data.dvc) without pushing; returns the data md5."""
    with _repo(root) as repo:
        repo.scm_context.quiet = True  # escrag commits data.dvc itself: no "git add data.dvc" hint
        repo.add(["data"])
    return data_md5(root) or ""


def push_data(root: Path) -> int:
    """`dvc push data.dvc` to the default remote; returns how many objects were pushed."""
    with _repo(root) as repo:
        return repo.push(targets=["data.dvc"])


def _declared_outs(root: Path, stage: str) -> list[tuple[str, bool]]:
    """(path, cached) for every out, metric and plot file that dvc.yaml declares for `stage`."""
    spec = read_yaml(root / "dvc.yaml").get("stages", {}).get(stage, {})
    declared = []
    for key in ("outs", "metrics", "plots"):
        for entry in spec.get(key, []):
            path, options = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
            declared.append((path, (options or {}).get("cache", key == "outs")))
    return declared


def cached_outs(root: Path, stage: str) -> list[str]:
    """The outputs of `stage` that DVC caches, and so pushes to and pulls from the remote."""
    return [path for path, cached in _declared_outs(root, stage) if cached]


def uncached_files(root: Path, stage: str) -> list[str]:
    """The uncached single-file outputs of `stage` (its metrics and plots): small, carried by git."""
    return [path for path, cached in _declared_outs(root, stage) if not cached and Path(path).suffix]


def remote_urls(root: Path) -> dict[str, str]:
    """Each DVC remote's URL as DVC resolves it (a relative local path becomes absolute)."""
    with _repo(root) as repo:
        return {name: str(remote["url"]) for name, remote in repo.config["remote"].items()}


def pull_stages(root: Path, stages: list[str]) -> None:
    """`dvc pull` the cached outputs of `stages` as `dvc.lock` records them."""
    if stages:
        with _repo(root) as repo:
            repo.pull(targets=stages, force=True)


def push_stages(root: Path, stages: list[str]) -> int:
    """`dvc push` the cached outputs of `stages`; returns how many objects were pushed."""
    targets = [s for s in stages if cached_outs(root, s)]
    if not targets:
        return 0
    with _repo(root) as repo:
        return repo.push(targets=targets)


def default_remote_name(root: Path) -> str:
    """The name of the project's default DVC remote (`core.remote` in `.dvc/config`)."""
    with _repo(root) as repo:
        return repo.config["core"]["remote"]


def default_remote_url(root: Path) -> str | None:
    """The default DVC remote's URL, a relative local path made absolute (as another clone must see it)."""
    with _repo(root) as repo:
        name = repo.config["core"].get("remote")
        url = repo.config["remote"].get(name, {}).get("url") if name else None
    if url and "://" not in url and not Path(url).is_absolute():
        url = str((root / ".dvc" / url).resolve())
    return url
