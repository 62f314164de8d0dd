"""Guidance-index benchmark: escrag indexing against raw encode, query latency at scale, re-index cost.

Run: .venv/bin/python bench/index.py [--sizes 1000 10000 100000] [--queries 200]
Prints one table; every ratio is measured side by side in this run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from models.embedder import load_embedder
from models.records import load_records
from models.retriever import RESULT_FIELDS, Retriever, content_hash, sync_index

ROOT = Path(__file__).resolve().parents[1]
MODES = ("vector", "fts", "hybrid")


def corpus(n: int) -> list[dict]:
    """The starter passages, repeated with a numbered variation until there are n."""
    base = load_records(ROOT / "starter_data", "knowledge")
    return [
        {**p, "id": f"{p['id']}-{i}", "text": f"{p['text']} (variant {i // len(base)})"}
        for i, p in zip(range(n), (base * (n // len(base) + 1)), strict=False)
    ]


def indexing(n: int) -> dict[str, float]:
    embedder = load_embedder()
    records = corpus(n)
    texts = [r["text"] for r in records]
    embedder.encode(texts[:64], batch_size=64)  # warm-up
    start = time.perf_counter()
    embedder.encode(texts, batch_size=64, normalize_embeddings=True)
    raw = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        sync_index(records, Path(tmp), "guidance", embedder, batch_size=64, ann_threshold=10**9)
        full = time.perf_counter() - start
        start = time.perf_counter()
        info = sync_index(records, Path(tmp), "guidance", embedder, batch_size=64, ann_threshold=10**9)
        again = time.perf_counter() - start
    assert info.embedded == 0
    return {"n": n, "raw_s": raw, "escrag_s": full, "reindex_s": again}


def scaled_table(db: Path, n: int, ann_threshold: int) -> None:
    """A table of n passages whose vectors are real MiniLM vectors with small noise (no re-embedding)."""
    import lancedb

    records = corpus(min(n, 2000))
    vectors = load_embedder().encode([r["text"] for r in records], batch_size=64, normalize_embeddings=True)
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        r, v = records[i % len(records)], vectors[i % len(records)]
        noisy = v + rng.normal(0, 0.02, v.shape)
        rows.append(
            {
                **{f: str(r[f]) for f in RESULT_FIELDS},
                "id": f"p{i}",
                "content_hash": content_hash(r),
                "vector": (noisy / np.linalg.norm(noisy)).astype(np.float32).tolist(),
            }
        )
    tbl = lancedb.connect(str(db)).create_table("guidance", data=rows, mode="overwrite")
    from models.retriever import _ensure_indices

    _ensure_indices(tbl, True, ann_threshold)


def latency(n: int, queries: list[str], ann_threshold: int) -> dict[str, tuple[float, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        scaled_table(Path(tmp), n, ann_threshold)
        retriever = Retriever(Path(tmp), "guidance", load_embedder())
        out = {}
        for mode in MODES:
            times = []
            for q in queries:
                start = time.perf_counter()
                retriever.search(q, k=5, mode=mode)
                times.append((time.perf_counter() - start) * 1000)
            q = statistics.quantiles(times, n=20)
            out[mode] = (statistics.median(times), q[18])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--index-n", type=int, default=1000, help="passages for the throughput comparison")
    parser.add_argument("--ann-threshold", type=int, default=5000)
    args = parser.parse_args()

    idx = indexing(args.index_n)
    print(f"indexing {idx['n']} passages: raw encode {idx['raw_s']:.2f} s, escrag sync_index {idx['escrag_s']:.2f} s")
    print(f"  throughput ratio escrag/raw: {idx['raw_s'] / idx['escrag_s']:.2f}x")
    print(
        f"  re-index unchanged: {idx['reindex_s']:.3f} s = {100 * idx['reindex_s'] / idx['escrag_s']:.1f}% "
        "of a full build"
    )
    dialogues = load_records(ROOT / "starter_data", "dialogues")
    queries = [t["text"] for d in dialogues for t in d["turns"] if t["speaker"] == "seeker"][: args.queries]
    print(f"\nquery latency, k=5, {len(queries)} queries (ms; ANN index from {args.ann_threshold} passages)")
    print(f"{'passages':>9} " + " ".join(f"{m + ' p50':>11} {m + ' p95':>11}" for m in MODES))
    for n in args.sizes:
        row = latency(n, queries, args.ann_threshold)
        print(f"{n:>9} " + " ".join(f"{row[m][0]:>11.2f} {row[m][1]:>11.2f}" for m in MODES))


if __name__ == "__main__":
    main()
