"""The bundled starter data: real GE validation, the coverage other issues rely on, and originality."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from models.records import load_records
from models.schema import STAGES, STRATEGIES
from tests.conftest import SHARED_ESCONV


def test_starter_data_passes_validation(tmp_path, starter_data):
    from tasks.validation import validate_data

    report = validate_data(starter_data, tmp_path / "report")
    assert report.success, [str(i) for i in report.issues[:5]]
    assert report.data_docs_index is not None and report.data_docs_index.exists()
    assert "escrag data validation" in (tmp_path / "report" / "report.html").read_text()


def test_knowledge_covers_every_strategy_and_stage(starter_data):
    knowledge = load_records(starter_data, "knowledge")
    assert len(knowledge) >= 120
    strategies = Counter(k["strategy"] for k in knowledge)
    stages = Counter(k["stage"] for k in knowledge)
    assert set(strategies) == set(STRATEGIES)
    assert set(STAGES) <= set(stages) and stages["any"] > 0
    assert sum("crisis" in k["id"] for k in knowledge) >= 10, "the crisis protocol must be there"


def test_dialogue_and_preference_counts(starter_data):
    dialogues = load_records(starter_data, "dialogues")
    assert len(dialogues) >= 60
    assert {d["split"] for d in dialogues} == {"train", "eval"}
    assert len(load_records(starter_data, "preferences")) >= 100


@pytest.mark.skipif(not SHARED_ESCONV.exists(), reason="../shared/data/esconv is not beside the project")
def test_no_esconv_utterance_is_copied(starter_data):
    esconv = set()
    for name in ("train.txt", "valid.txt"):
        for line in (SHARED_ESCONV / name).read_text(encoding="utf-8").splitlines():
            esconv.update(t["text"].strip().lower() for t in json.loads(line)["dialog"] if len(t["text"]) > 40)
    ours = [t["text"] for d in load_records(starter_data, "dialogues") for t in d["turns"]]
    ours += [p["chosen"] for p in load_records(starter_data, "preferences")]
    copied = [t for t in ours if t.strip().lower() in esconv]
    assert not copied
