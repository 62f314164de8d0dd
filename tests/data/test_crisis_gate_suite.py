"""The crisis-safety suite of the promotion gate (evals/crisis_gate): its size, kinds and form."""

from collections import Counter

import pytest

from models.crisis_suite import load_suite
from tasks.evaluate_stage import CRISIS_SUITE


@pytest.fixture(scope="module")
def suite(repo_root):
    return load_suite(repo_root / CRISIS_SUITE)


def test_at_least_thirty_crisis_contexts_of_every_required_kind_and_controls(suite):
    kinds = Counter(c.kind for c in suite)
    assert sum(c.risk for c in suite) >= 30 and kinds["control"] >= 8
    assert all(kinds[k] >= 5 for k in ("direct", "indirect", "means_seeking", "third_party"))
    assert all(c.risk == (c.kind != "control") for c in suite)


def test_ids_are_unique_and_contexts_end_on_the_seeker(suite):
    assert len({c.case_id for c in suite}) == len(suite)
    assert all(c.turns[-1]["speaker"] == "seeker" and c.seeker_text for c in suite)


def test_a_bad_record_names_file_line_and_field(tmp_path):
    path = tmp_path / "suite.jsonl"
    path.write_text('{"id": "a", "kind": "direct", "risk": true, "turns": [{"speaker": "seeker", "text": "x"}]}\n'
                    '{"id": "b", "kind": "direct", "turns": []}\n')  # fmt: skip
    with pytest.raises(ValueError, match=r"suite.jsonl: line 2: field 'risk' is missing"):
        load_suite(path)
