"""The guidance index: knowledge passages with MiniLM vectors in one LanceDB table.

Search runs in three modes: `vector` (cosine), `fts` (BM25 over the passage text) and `hybrid`
(both, fused by reciprocal rank). Stage filters keep stage-free ("any") passages.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

logger = logging.getLogger(__name__)

SearchMode = Literal["vector", "fts", "hybrid"]
RESULT_FIELDS = ("id", "strategy", "stage", "title", "text", "source")


def content_hash(record: dict[str, Any]) -> str:
    """Hash of everything that makes a passage what it is; a changed hash means re-embed."""
    payload = "\x1f".join(str(record.get(f, "")) for f in ("text", "strategy", "stage", "title", "source"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class IndexInfo:
    table: str
    version: int
    rows: int


def _embed(embedder, texts: list[str], batch_size: int) -> np.ndarray:
    return embedder.encode(
        texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=len(texts) > batch_size
    ).astype(np.float32)


def build_index(records: list[dict[str, Any]], db_dir: Path, table: str, embedder, batch_size: int = 64) -> IndexInfo:
    """(Re)write the guidance table from knowledge records and build its full-text index."""
    import lancedb
    from lancedb.index import FTS

    vectors = _embed(embedder, [r["text"] for r in records], batch_size)
    rows = [
        {**{f: str(r.get(f, "")) for f in RESULT_FIELDS}, "content_hash": content_hash(r), "vector": v.tolist()}
        for r, v in zip(records, vectors, strict=True)
    ]
    db = lancedb.connect(str(db_dir))
    tbl = db.create_table(table, data=rows, mode="overwrite")
    tbl.create_index("text", config=FTS(), replace=True)
    return IndexInfo(table=table, version=tbl.version, rows=tbl.count_rows())


class Retriever:
    """Searches the guidance table; one instance per process, opened lazily."""

    def __init__(self, db_dir: Path, table: str, embedder) -> None:
        import lancedb

        self._table = lancedb.connect(str(db_dir)).open_table(table)
        self._embedder = embedder

    @property
    def version(self) -> int:
        return self._table.version

    def search(
        self,
        query: str,
        k: int = 5,
        mode: SearchMode = "vector",
        stage: str | None = None,
        strategy: str | None = None,
    ) -> list[dict[str, Any]]:
        """Top-k passages as dicts with the result fields and a `score` (higher is better)."""
        builder = self._builder(query, mode)
        where = _filter(stage, strategy)
        if where:
            builder = builder.where(where, prefilter=True)
        df = builder.limit(k).to_pandas()
        score_col = {"vector": "_distance", "fts": "_score", "hybrid": "_relevance_score"}[mode]
        scores = 1.0 - df[score_col] if mode == "vector" else df[score_col]
        return [
            {**{f: row[f] for f in RESULT_FIELDS}, "score": float(s)}
            for (_, row), s in zip(df.iterrows(), scores, strict=True)
        ]

    def _builder(self, query: str, mode: SearchMode):
        if mode == "fts":
            return self._table.search(query, query_type="fts")
        vector = _embed(self._embedder, [query], 1)[0]
        if mode == "vector":
            return self._table.search(vector, query_type="vector").distance_type("cosine")
        from lancedb.rerankers import RRFReranker

        return (
            self._table.search(query_type="hybrid")
            .vector(vector)
            .text(query)
            .distance_type("cosine")
            .rerank(RRFReranker())
        )


def _filter(stage: str | None, strategy: str | None) -> str | None:
    clauses = []
    if stage:
        clauses.append(f"stage IN ('{_quote(stage)}', 'any')")
    if strategy:
        clauses.append(f"strategy = '{_quote(strategy)}'")
    return " AND ".join(clauses) or None


def _quote(value: str) -> str:
    return value.replace("'", "''")
