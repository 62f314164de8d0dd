"""Real LanceDB with the real MiniLM embedder, on the bundled knowledge passages."""

from __future__ import annotations

import pytest

from models.records import load_records


@pytest.fixture(scope="module")
def retriever(tmp_path_factory, starter_data):
    from models.embedder import load_embedder
    from models.retriever import Retriever, build_index

    db = tmp_path_factory.mktemp("index")
    records = load_records(starter_data, "knowledge")
    info = build_index(records, db, "guidance", load_embedder(), batch_size=64)
    assert info.rows == len(records)
    return Retriever(db, "guidance", load_embedder())


@pytest.mark.parametrize("mode", ["vector", "fts", "hybrid"])
def test_search_returns_k_passages_with_every_field(retriever, mode):
    hits = retriever.search("I lost my job and I can't stop worrying about rent", k=5, mode=mode)
    assert len(hits) == 5
    for hit in hits:
        assert {"id", "strategy", "stage", "title", "text", "score"} <= set(hit)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_stage_filter_keeps_stage_and_any(retriever):
    hits = retriever.search("what should I do next about my debts", k=8, stage="Action")
    assert hits and {h["stage"] for h in hits} <= {"Action", "any"}


def test_crisis_query_finds_crisis_guidance(retriever):
    hits = retriever.search("I want to end my life, I have pills saved up", k=3)
    assert any("crisis" in h["id"] or h["stage"] == "any" for h in hits)
