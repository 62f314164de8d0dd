from models.retrieval_eval import Probe, compare_modes, probes, random_baseline, score_rankings
from models.retriever import cap_per_strategy

DIALOGUE = {
    "situation": "Lost my job",
    "turns": [
        {"speaker": "supporter", "text": "Hi, how are you?", "strategy": "Question"},
        {"speaker": "seeker", "text": "I lost my job."},
        {"speaker": "supporter", "text": "That sounds scary.", "strategy": "Reflection of feelings"},
        {"speaker": "seeker", "text": "It is."},
        {"speaker": "supporter", "text": "Could you update your CV?", "strategy": "Providing Suggestions"},
    ],
}


def test_probes_skip_turns_before_any_seeker_turn():
    items = probes([DIALOGUE])
    assert [p.gold_strategy for p in items] == ["Reflection of feelings", "Providing Suggestions"]
    assert items[1].query == "I lost my job. It is."


def test_scores_hits_and_mrr():
    rankings = [["A", "B", "C"], ["B", "A", "C"], ["C", "C", "C"]]
    scores = score_rankings(rankings, ["A", "A", "A"], k=2)
    assert scores["hit@1"] == 1 / 3
    assert scores["hit@2"] == 2 / 3
    assert abs(scores["mrr"] - (1 + 0.5 + 0) / 3) < 1e-9


def test_a_perfect_retriever_beats_random():
    corpus = ["Question"] * 5 + ["Information"] * 45
    items = [Probe("q", "Question")] * 40
    table = compare_modes({"oracle": lambda q, d: [{"strategy": "Question"}] * d}, corpus, items, k=1)
    assert table["oracle"]["hit@1"] == 1.0
    assert table["random"]["hit@1"] < 0.5
    assert random_baseline(corpus, items, k=1, seed=3) == random_baseline(corpus, items, k=1, seed=3)


def test_the_cap_keeps_the_best_passages_of_each_strategy_in_order():
    hits = [{"id": i, "strategy": s} for i, s in enumerate("AABACB")]
    assert [h["id"] for h in cap_per_strategy(hits, 1)] == [0, 2, 4]
    assert [h["id"] for h in cap_per_strategy(hits, 2)] == [0, 1, 2, 4, 5]


def test_the_capped_random_baseline_spreads_over_strategies():
    corpus = ["Question"] * 45 + ["Information"] * 5
    items = [Probe("q", "Information")] * 200
    table = compare_modes({}, corpus, items, k=2, max_per_strategy=1)
    assert table["random_capped"]["hit@2"] == 1.0, "two strategies, one passage each: always both"
    assert table["random"]["hit@2"] < 0.5
