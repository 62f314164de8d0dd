import json

import pytest

from models.esconv import EsconvFormatError, read_esconv
from tests.conftest import SHARED_ESCONV

RECORD = {
    "situation": "Worried about exams",
    "emotion_type": "anxiety",
    "problem_type": "academic pressure",
    "survey_score": {"seeker": {"empathy": "5", "relevance": "4"}},
    "dialog": [
        {"speaker": "seeker", "content": "Hi"},
        {"speaker": "supporter", "content": "Hello, what is on your mind?", "annotation": {"strategy": "Question"}},
    ],
}


def test_single_json_file_with_seeker_supporter_spelling(tmp_path):
    path = tmp_path / "ESConv.json"
    path.write_text(json.dumps([RECORD, RECORD]))
    dialogues = list(read_esconv(path))
    assert len(dialogues) == 2
    first = dialogues[0]
    assert first["turns"][1] == {"speaker": "supporter", "text": "Hello, what is on your mind?", "strategy": "Question"}
    assert first["survey"] == {"seeker_empathy": 5.0, "seeker_relevance": 4.0}
    assert {d["split"] for d in dialogues} <= {"train", "eval"}


def test_unknown_speaker_names_the_field(tmp_path):
    bad = {**RECORD, "dialog": [{"speaker": "bot", "content": "x"}]}
    (tmp_path / "ESConv.json").write_text(json.dumps([bad]))
    with pytest.raises(EsconvFormatError, match=r"dialog\[0\]\.speaker"):
        list(read_esconv(tmp_path / "ESConv.json"))


@pytest.mark.skipif(not SHARED_ESCONV.exists(), reason="../shared/data/esconv is not beside the project")
def test_folder_form_keeps_strategies_and_splits_by_conversation():
    dialogues = list(read_esconv(SHARED_ESCONV))
    assert len(dialogues) == 1105
    assert {d["split"] for d in dialogues} == {"train", "eval"}
    assert sum(d["split"] == "eval" for d in dialogues) == 195
    supporter = [t for d in dialogues for t in d["turns"] if t["speaker"] == "supporter"]
    assert sum("strategy" in t for t in supporter) / len(supporter) > 0.9
    assert len({d["conversation_id"] for d in dialogues}) == len(dialogues)
