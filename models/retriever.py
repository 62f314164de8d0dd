"""The guidance index: knowledge passages with MiniLM vectors in one LanceDB table.

Search runs in three modes: `vector` (cosine), `fts` (BM25 over the passage text) and `hybrid`
(both, fused by reciprocal rank). Stage filters keep stage-free ("any") passages.

`max_per_strategy` keeps at most that many passages of one strategy in a result, best first. Nearby
passages tend to share a strategy, so without it the k passages of a prompt often offer one strategy k
times; with 1 they offer the k strategies that fit the query best, and the policy chooses among them.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from models.schema import STRATEGIES

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
    embedded: int
    deleted: int
    ann: bool


def _embed(embedder, texts: list[str], batch_size: int) -> np.ndarray:
    return embedder.encode(
        texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=len(texts) > batch_size
    ).astype(np.float32)


def _rows(records: list[dict[str, Any]], embedder, batch_size: int) -> list[dict[str, Any]]:
    vectors = _embed(embedder, [r["text"] for r in records], batch_size) if records else []
    return [
        {**{f: str(r.get(f, "")) for f in RESULT_FIELDS}, "content_hash": content_hash(r), "vector": v.tolist()}
        for r, v in zip(records, vectors, strict=True)
    ]


def _id_list(ids: list[str]) -> str:
    return ", ".join(f"'{_quote(i)}'" for i in ids)


def sync_index(
    records: list[dict[str, Any]],
    db_dir: Path,
    table: str,
    embedder,
    *,
    batch_size: int = 64,
    ann_threshold: int = 5000,
    data_version: str | None = None,
) -> IndexInfo:
    """Bring the guidance table in line with `records`, embedding only new or changed passages.

    Passages are matched by id and compared by content hash; removed ones are deleted. Each resulting
    table version is tagged with the data version it was built from.
    """
    import lancedb

    db = lancedb.connect(str(db_dir))
    wanted = {r["id"]: (r, content_hash(r)) for r in records}
    existing: dict[str, str] = {}
    if table in db.list_tables().tables:
        tbl = db.open_table(table)
        current = tbl.to_arrow().select(["id", "content_hash"]).to_pylist()
        existing = {row["id"]: row["content_hash"] for row in current}
    stale = [i for i, h in existing.items() if wanted.get(i, (None, None))[1] != h]
    fresh = [r for i, (r, h) in wanted.items() if existing.get(i) != h]
    logger.info(
        "index %s: %d to embed, %d to delete, %d unchanged", table, len(fresh), len(stale), len(wanted) - len(fresh)
    )
    if not existing:
        tbl = db.create_table(table, data=_rows(fresh, embedder, batch_size), mode="overwrite")
    else:
        if stale:
            tbl.delete(f"id IN ({_id_list(stale)})")
        if fresh:
            tbl.add(_rows(fresh, embedder, batch_size))
    changed = bool(fresh or stale)
    ann = _ensure_indices(tbl, changed, ann_threshold)
    if data_version:
        _tag(tbl, f"data-{data_version.removesuffix('.dir')}")
    return IndexInfo(table, tbl.version, tbl.count_rows(), len(fresh), len(stale), ann)


def _ensure_indices(tbl, changed: bool, ann_threshold: int) -> bool:
    """BM25 over the text always; an ANN index only past the size threshold (exact search below it)."""
    from lancedb.index import FTS

    names = {i.name for i in tbl.list_indices()}
    # Rows the text index misses: a build cut short after its rows were committed (a kill, a full disk).
    behind = "text_idx" in names and tbl.index_stats("text_idx").num_unindexed_rows > 0
    if changed or behind or "text_idx" not in names:
        tbl.create_index("text", config=FTS(), replace=True)
    rows = tbl.count_rows()
    if rows < ann_threshold:
        if "vector_idx" in names:
            tbl.drop_index("vector_idx")
        return False
    if changed or "vector_idx" not in names:
        partitions = max(1, int(rows**0.5))
        tbl.create_index(
            metric="cosine",
            vector_column_name="vector",
            index_type="IVF_PQ",
            num_partitions=partitions,
            num_sub_vectors=48,
            replace=True,
        )
    return True


def _tag(tbl, name: str) -> None:
    tags = tbl.tags.list()
    if name in tags:
        tbl.tags.update(name, tbl.version)
    else:
        tbl.tags.create(name, tbl.version)


class Retriever:
    """Searches the guidance table; one instance per process, opened lazily."""

    def __init__(
        self,
        db_dir: Path,
        table: str,
        embedder,
        mode: SearchMode = "vector",
        max_per_strategy: int = 0,
        version: int | None = None,
    ) -> None:
        import lancedb

        self._table = lancedb.connect(str(db_dir)).open_table(table)
        if version is not None:  # a pinned table version (a served model searches what it was trained on)
            self._table.checkout(version)
        self._embedder = embedder
        self.mode = mode
        self.max_per_strategy = max_per_strategy  # 0: no limit

    @property
    def version(self) -> int:
        return self._table.version

    def search(
        self,
        query: str,
        k: int = 5,
        mode: SearchMode | None = None,
        stage: str | None = None,
        strategy: str | None = None,
        max_per_strategy: int | None = None,
    ) -> list[dict[str, Any]]:
        """Top-k passages as dicts with the result fields and a `score` (higher is better).

        `mode` and `max_per_strategy` default to the retriever's; the cap does not apply with `strategy`.
        """
        mode = mode or self.mode
        cap = 0 if strategy else (self.max_per_strategy if max_per_strategy is None else max_per_strategy)
        score_col = {"vector": "_distance", "fts": "_score", "hybrid": "_relevance_score"}[mode]
        builder = self._builder(query, mode)
        if mode != "hybrid":  # not the vectors; hybrid's sub-queries would warn about their score columns
            builder = builder.select([*RESULT_FIELDS, score_col])
        where = _filter(stage, strategy)
        if where:
            builder = builder.where(where, prefilter=True)
        rows = builder.limit(k * len(STRATEGIES) if cap else k).to_arrow().to_pylist()
        hits = [
            {
                **{f: row[f] for f in RESULT_FIELDS},
                "score": 1.0 - row[score_col] if mode == "vector" else row[score_col],
            }
            for row in rows
        ]
        return (cap_per_strategy(hits, cap) if cap else hits)[:k]

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


def cap_per_strategy(hits: list[dict[str, Any]], cap: int) -> list[dict[str, Any]]:
    """The hits in order, skipping any beyond the first `cap` of their strategy."""
    seen: dict[str, int] = {}
    kept = []
    for hit in hits:
        seen[hit["strategy"]] = seen.get(hit["strategy"], 0) + 1
        if seen[hit["strategy"]] <= cap:
            kept.append(hit)
    return kept


def _filter(stage: str | None, strategy: str | None) -> str | None:
    clauses = []
    if stage:
        clauses.append(f"stage IN ('{_quote(stage)}', 'any')")
    if strategy:
        clauses.append(f"strategy = '{_quote(strategy)}'")
    return " AND ".join(clauses) or None


def _quote(value: str) -> str:
    return value.replace("'", "''")
