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


def indexing(n: int, rounds: int = 3) -> dict[str, float]:
    """Raw encode and a full sync_index of the same n texts, alternated `rounds` times; the best of each.

    Alternating and taking the minimum keeps a busy neighbour on the 2 cores from deciding the ratio.
    """
    embedder = load_embedder()
    records = corpus(n)
    texts = [r["text"] for r in records]
    embedder.encode(texts[:64], batch_size=64)  # warm-up
    raw, full, again = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        embedder.encode(texts, batch_size=64, normalize_embeddings=True)
        raw.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            sync_index(records, Path(tmp), "guidance", embedder, batch_size=64, ann_threshold=10**9)
            full.append(time.perf_counter() - start)
            start = time.perf_counter()
            info = sync_index(records, Path(tmp), "guidance", embedder, batch_size=64, ann_threshold=10**9)
            again.append(time.perf_counter() - start)
        assert info.embedded == 0
    return {"n": n, "raw_s": min(raw), "escrag_s": min(full), "reindex_s": min(again)}


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


class PrecomputedEmbedder:
    """Returns query vectors encoded beforehand, so latency is the search alone (encode is timed apart)."""

    def __init__(self, embedder, texts: list[str]) -> None:
        vectors = embedder.encode(texts, batch_size=64, normalize_embeddings=True)
        self._vectors = dict(zip(texts, vectors, strict=True))

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts])


def p50_p95(times_ms: list[float]) -> tuple[float, float]:
    return statistics.median(times_ms), statistics.quantiles(times_ms, n=20)[18]


def encode_latency(queries: list[str]) -> tuple[float, float]:
    embedder = load_embedder()
    times = []
    for q in queries:
        start = time.perf_counter()
        embedder.encode([q], normalize_embeddings=True)
        times.append((time.perf_counter() - start) * 1000)
    return p50_p95(times)


def latency(n: int, queries: list[str], ann_threshold: int, cap: int) -> dict[str, tuple[float, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        scaled_table(Path(tmp), n, ann_threshold)
        retriever = Retriever(
            Path(tmp), "guidance", PrecomputedEmbedder(load_embedder(), queries), max_per_strategy=cap
        )
        out = {}
        for mode in MODES:
            for q in queries[:10]:  # warm-up: opens the indices and fills the page cache
                retriever.search(q, k=5, mode=mode)
            times = []
            for q in queries:
                start = time.perf_counter()
                retriever.search(q, k=5, mode=mode)
                times.append((time.perf_counter() - start) * 1000)
            out[mode] = p50_p95(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--index-n", type=int, default=1000, help="passages for the throughput comparison")
    parser.add_argument("--ann-threshold", type=int, default=5000)
    parser.add_argument("--max-per-strategy", type=int, default=1, help="the search cap (params.yaml default 1)")
    args = parser.parse_args()

    idx = indexing(args.index_n)
    print(
        f"indexing {idx['n']} passages (best of 3, alternated): raw encode {idx['raw_s']:.2f} s, "
        f"escrag sync_index {idx['escrag_s']:.2f} s"
    )
    print(f"  throughput ratio escrag/raw: {idx['raw_s'] / idx['escrag_s']:.2f}x")
    print(
        f"  re-index unchanged: {idx['reindex_s']:.3f} s = {100 * idx['reindex_s'] / idx['escrag_s']:.1f}% "
        "of a full build"
    )
    dialogues = load_records(ROOT / "starter_data", "dialogues")
    queries = [t["text"] for d in dialogues for t in d["turns"] if t["speaker"] == "seeker"][: args.queries]
    enc50, enc95 = encode_latency(queries)
    print(
        f"\nquery latency, k=5, max_per_strategy {args.max_per_strategy}, {len(queries)} queries, ms; "
        f"ANN index from {args.ann_threshold} passages.\nSearch only; encoding one query with MiniLM adds "
        f"p50 {enc50:.2f} / p95 {enc95:.2f} ms to vector and hybrid."
    )
    print(f"{'passages':>9} " + " ".join(f"{m + ' p50':>11} {m + ' p95':>11}" for m in MODES))
    for n in args.sizes:
        row = latency(n, queries, args.ann_threshold, args.max_per_strategy)
        print(f"{n:>9} " + " ".join(f"{row[m][0]:>11.2f} {row[m][1]:>11.2f}" for m in MODES), flush=True)


if __name__ == "__main__":
    main()
