"""The `data` flow: import or add → validate → write → version → push → commit, one Prefect task each.

It composes the same functions `escrag data add` runs in-process (tasks.data_ops.run_add), so the two
paths cannot drift. The push is retried with back-off: remotes fail transiently. `pipeline.version_data`
(the retrain flow's step) runs `dvc add` and `dvc push` as one retried unit; here they are separate
tasks, so a failed push is retried without re-hashing data/, and the record counts land in data.dvc's
meta in between.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from tasks import data_ops, data_sources
from tasks.pipeline import REMOTE_RETRIES
from tasks.project import Project


@task(name="data-import", cache_policy=NO_CACHE)
def import_corpus(
    project: Project, source: str, path: str, workdir: Path, name: str | None
) -> list[data_sources.NewFile]:
    return data_sources.import_files(project, source, Path(path), workdir, name)


@task(name="data-sources", cache_policy=NO_CACHE)
def collect(dataset: str, paths: list[str], name: str | None) -> list[data_sources.NewFile]:
    return data_sources.collect_sources(dataset, [Path(p) for p in paths], name)


@task(name="data-prepare", cache_policy=NO_CACHE)
def prepare(project: Project, verb: str, files: list, workdir: Path) -> data_ops.Plan:
    return data_ops.prepare(project, verb, files, workdir)


@task(name="data-validate", cache_policy=NO_CACHE)
def validate(project: Project, plan: data_ops.Plan) -> dict[str, int]:
    return data_ops.validate(project, plan)


@task(name="data-write", cache_policy=NO_CACHE)
def write(project: Project, plan: data_ops.Plan) -> list[Path]:
    return data_ops.write(project, plan)


@task(name="data-version", cache_policy=NO_CACHE)
def version(project: Project, plan: data_ops.Plan) -> str:
    return data_ops.version(project, plan)


@task(name="data-push", cache_policy=NO_CACHE, **REMOTE_RETRIES)
def push(project: Project) -> int:
    return data_ops.push(project, attempts=1)


@task(name="data-commit", cache_policy=NO_CACHE)
def commit(project: Project, message: str) -> str | None:
    return data_ops.commit(project, message)


STEPS = data_ops.Steps(prepare=prepare, validate=validate, write=write, version=version, push=push, commit=commit)


@flow(name="data", log_prints=False)
def data(
    project_dir: str | None = None,
    action: str = "add",
    dataset: str | None = None,
    paths: list[str] | None = None,
    name: str | None = None,
    source: str = "esconv",
) -> data_ops.AddResult:
    """action "add": DATASET and PATHS (files or folders of *.jsonl); "import": PATHS[0] is the SOURCE corpus
    (esconv, epitome or diasafety)."""
    project = Project.discover(Path(project_dir) if project_dir else None)
    project.params  # noqa: B018 - validate params.yaml before any work
    paths = paths or []
    with tempfile.TemporaryDirectory(prefix="escrag-data-") as tmp:
        if action == "import":
            files = import_corpus(project, source, paths[0], Path(tmp), name)
        elif action == "add" and dataset:
            files = collect(dataset, paths, name)
        else:
            raise ValueError(f"action must be 'import' or 'add' (with a dataset), got {action!r}")
        return data_ops.run_add(project, action, files, Path(tmp), STEPS)
