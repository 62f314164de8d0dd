"""Open the guidance index with the project's retrieval settings: one place for every caller."""

from __future__ import annotations

from typing import Any

from tasks.project import Project


def open_retriever(project: Project) -> Any:
    """A `Retriever` on the project's index, searching in `retrieval.mode` with `retrieval.max_per_strategy`."""
    from models.embedder import load_embedder
    from models.retriever import Retriever

    index_dir = project.artifact("index")
    if not index_dir.exists():
        raise FileNotFoundError(f"{index_dir}: no guidance index yet; run `escrag run` or `dvc repro index`")
    params = project.params
    return Retriever(
        index_dir,
        params.index.table,
        load_embedder(project.compute),
        mode=params.retrieval.mode,
        max_per_strategy=params.retrieval.max_per_strategy,
    )
