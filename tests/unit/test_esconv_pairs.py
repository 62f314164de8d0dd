"""ESConv → preference pairs: context, chosen, the off-context negative, subsampling, splits, determinism."""

from __future__ import annotations

import pytest

from models.esconv_pairs import (
    CONTEXT_TURNS,
    NEGATIVE_RULE,
    build_pairs,
    candidate_turns,
    clean_dialogue,
    convert_esconv,
    position_bin,
)
from tests.conftest import SHARED_ESCONV


def _dialogue(cid: str, split: str, n_exchanges: int, opener: bool = False) -> dict:
    turns = [{"speaker": "supporter", "text": f"Hello there, welcome {cid}.", "strategy": "Question"}] if opener else []
    for k in range(n_exchanges):
        turns.append({"speaker": "seeker", "text": f"{cid} seeker says thing number {k}."})
        turns.append({"speaker": "supporter", "text": f"{cid} supporter answers with care {k}.", "strategy": "Others"})
    return {"id": cid, "conversation_id": cid, "situation": "A hard week.", "turns": turns, "split": split}


DIALOGUES = [_dialogue(f"c{i}", "eval" if i >= 4 else "train", 6, opener=i % 2 == 0) for i in range(6)]


def test_candidates_answer_a_seeker_turn_and_skip_the_opening():
    turns = _dialogue("c0", "train", 3, opener=True)["turns"]
    assert candidate_turns(turns) == [2, 4, 6]  # turn 0 (before any seeker turn) is never a candidate


def test_pairs_follow_the_documented_rule():
    pairs = build_pairs(DIALOGUES, seed=1, per_conversation=2)
    by_id = {d["id"]: d for d in DIALOGUES}
    assert len(pairs) == 2 * len(DIALOGUES)
    for pair in pairs:
        d = by_id[pair["conversation_id"]]
        index = int(pair["id"].rsplit("-t", 1)[1])
        assert pair["chosen"] == d["turns"][index]["text"]
        assert pair["context"] == d["turns"][max(0, index - CONTEXT_TURNS) : index]
        assert pair["context"][-1]["speaker"] == "seeker"
        assert len(pair["context"]) <= CONTEXT_TURNS
        assert pair["split"] == d["split"]
        source = next(o for o in DIALOGUES if any(t["text"] == pair["rejected"] for t in o["turns"]))
        assert source["id"] != d["id"], "the negative comes from another conversation"
        assert source["split"] == d["split"], "the negative comes from the same split"
        other_index = next(i for i, t in enumerate(source["turns"]) if t["text"] == pair["rejected"])
        assert abs(position_bin(other_index, len(source["turns"])) - position_bin(index, len(d["turns"]))) <= 1
        assert NEGATIVE_RULE in pair["rationale"] and source["id"] in pair["rationale"]


def test_pairs_are_deterministic_and_independent_of_input_order():
    assert build_pairs(DIALOGUES, seed=3) == build_pairs(list(reversed(DIALOGUES)), seed=3)
    assert build_pairs(DIALOGUES, seed=3) != build_pairs(DIALOGUES, seed=4)


def test_a_lone_conversation_has_no_negative_and_gives_no_pair():
    assert build_pairs([_dialogue("solo", "train", 4)]) == []


def test_clean_dialogue_drops_unanswered_survey_items_and_empty_fields():
    d = {**DIALOGUES[0], "survey": {"seeker_empathy": 5.0, "supporter_relevance": 0.0}, "emotion": None}
    cleaned = clean_dialogue(d)
    assert cleaned["survey"] == {"seeker_empathy": 5.0}
    assert "emotion" not in cleaned
    assert "emotion" in d, "the input is not modified"


@pytest.mark.skipif(not SHARED_ESCONV.exists(), reason="../shared/data/esconv is not beside the project")
def test_real_esconv_pairs_keep_conversations_in_one_split():
    dialogues, pairs = convert_esconv(SHARED_ESCONV, seed=13)
    assert len(dialogues) == 1105
    assert 2500 < len(pairs) <= 3 * len(dialogues)
    split_of = {d["id"]: d["split"] for d in dialogues}
    assert all(p["split"] == split_of[p["conversation_id"]] for p in pairs)
    assert len({p["id"] for p in pairs}) == len(pairs)
    assert all(p["chosen"].strip().lower() != p["rejected"].strip().lower() for p in pairs)
    assert all(1 <= v <= 5 for d in dialogues for v in d.get("survey", {}).values())
