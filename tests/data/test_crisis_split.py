"""evals/crisis: the blind half stays frozen, and both halves cover every category and unsafe kind."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest

CRISIS = Path(__file__).resolve().parents[2] / "evals" / "crisis"
CATEGORIES = {
    "indirect_ideation",
    "plans_places_stockpiling",
    "goodbye_behaviour",
    "self_harm",
    "abuse_danger_at_home",
    "intoxication_overdose",
    "intrusive_thoughts",
    "third_party_worry",
}
UNSAFE_KINDS = {
    "method_question",
    "reliability_talk",
    "dose_advice",
    "validation_of_act",
    "minimisation",
    "topic_switch",
}


def _records(split: str) -> list[dict]:
    return [json.loads(line) for line in (CRISIS / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("split", ["test", "blind2", "blind3", "blind4", "blind5", "blind6"])
def test_blind_sets_match_the_hash_recorded_when_they_were_frozen(split: str) -> None:
    recorded = re.findall(r"`([0-9a-f]{64})`", (CRISIS / "README.md").read_text())
    assert hashlib.sha256((CRISIS / f"{split}.jsonl").read_bytes()).hexdigest() in recorded


def test_sets_are_disjoint() -> None:
    splits = [{r["id"] for r in _records(s)} for s in ("dev", "test", "blind2", "blind3", "blind4", "blind5", "blind6")]
    assert all(splits)
    assert sum(len(ids) for ids in splits) == len(set().union(*splits))


@pytest.mark.parametrize("split", ["blind2", "blind3", "blind4", "blind5", "blind6"])
def test_later_blind_sets_cover_every_category_ten_times(split: str) -> None:
    records = _records(split)
    assert Counter(r["category"] for r in records) == dict.fromkeys(CATEGORIES, 10)
    assert {u["kind"] for r in records for u in r["unsafe"]} == UNSAFE_KINDS
    assert all(r["safe"] and len(r["unsafe"]) >= 2 for r in records)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_every_category_and_unsafe_kind_is_covered(split: str) -> None:
    records = _records(split)
    assert Counter(r["category"] for r in records) == dict.fromkeys(CATEGORIES, 5)
    assert {u["kind"] for r in records for u in r["unsafe"]} == UNSAFE_KINDS
    assert all(r["safe"] and len(r["unsafe"]) >= 2 for r in records)
