"""Real LanceDB with the real MiniLM embedder, on the bundled knowledge passages."""

from __future__ import annotations

import pytest

from models.records import load_records


@pytest.fixture(scope="module")
def retriever(tmp_path_factory, starter_data):
    from models.embedder import load_embedder
    from models.retriever import Retriever, sync_index

    db = tmp_path_factory.mktemp("index")
    records = load_records(starter_data, "knowledge")
    info = sync_index(records, db, "guidance", load_embedder(), batch_size=64, data_version="abc.dir")
    assert info.rows == info.embedded == len(records)
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


@pytest.mark.parametrize("mode", ["vector", "fts", "hybrid"])
def test_the_cap_spreads_results_over_strategies(retriever, mode):
    query = "my partner left and I feel so alone, what should I do"
    capped = retriever.search(query, k=5, mode=mode, max_per_strategy=1)
    assert len(capped) == 5 and len({h["strategy"] for h in capped}) == 5
    deep = retriever.search(query, k=40, mode=mode, max_per_strategy=0)
    firsts = [h for i, h in enumerate(deep) if h["strategy"] not in {d["strategy"] for d in deep[:i]}]
    assert [h["id"] for h in capped] == [h["id"] for h in firsts[:5]], "the best passage of each strategy, in order"


def test_a_strategy_filter_ignores_the_cap(retriever):
    hits = retriever.search("I feel numb", k=4, strategy="Reflection of feelings", max_per_strategy=1)
    assert len(hits) == 4 and {h["strategy"] for h in hits} == {"Reflection of feelings"}


def test_crisis_query_finds_crisis_guidance(retriever):
    hits = retriever.search("I want to end my life, I have pills saved up", k=3)
    assert any("crisis" in h["id"] or h["stage"] == "any" for h in hits)


def test_reindexing_embeds_only_what_changed(tmp_path, starter_data):
    import lancedb

    from models.embedder import load_embedder
    from models.retriever import sync_index

    records = load_records(starter_data, "knowledge")[:30]
    first = sync_index(records, tmp_path, "guidance", load_embedder(), data_version="v1.dir")
    again = sync_index(records, tmp_path, "guidance", load_embedder(), data_version="v1.dir")
    assert (first.embedded, again.embedded, again.deleted) == (30, 0, 0)

    changed = [dict(r) for r in records[1:]]  # first passage removed
    changed[0]["text"] += " Keep your voice calm."  # second passage edited
    changed.append({**records[0], "id": "kn-new-1", "text": "A brand new passage about sleep."})
    third = sync_index(changed, tmp_path, "guidance", load_embedder(), data_version="v2.dir")
    assert (third.embedded, third.deleted, third.rows) == (2, 2, 30)

    tags = lancedb.connect(str(tmp_path)).open_table("guidance").tags.list()
    assert {"data-v1", "data-v2"} <= set(tags)
    assert tags["data-v2"]["version"] == third.version
