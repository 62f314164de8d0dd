"""ESConv into escrag's dialogue format.

Accepts a folder of `train.txt`/`valid.txt` JSON-lines files or the original single `ESConv.json`, and
both spellings of speakers (`usr`/`sys` and `seeker`/`supporter`). Splits come from the files (valid →
eval); in `ESConv.json`, which has no splits, a stable hash of the conversation decides, so a
conversation never lands in both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SPEAKER = {"usr": "seeker", "seeker": "seeker", "sys": "supporter", "supporter": "supporter"}
SPLIT_FILES = {"train.txt": "train", "valid.txt": "eval"}


class EsconvFormatError(ValueError):
    """An ESConv record that cannot be converted; names file, line and field."""


def _turns(dialog: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    turns = []
    for i, turn in enumerate(dialog):
        speaker = SPEAKER.get(str(turn.get("speaker", "")).lower())
        if speaker is None:
            raise EsconvFormatError(f"{where}: field 'dialog[{i}].speaker': unknown speaker {turn.get('speaker')!r}")
        text = str(turn.get("content", turn.get("text", ""))).strip()
        if not text:
            continue
        converted = {"speaker": speaker, "text": text}
        strategy = (turn.get("annotation") or {}).get("strategy") or turn.get("strategy")
        if speaker == "supporter" and strategy:
            converted["strategy"] = str(strategy).strip("[]")
        turns.append(converted)
    return turns


def _survey(record: dict[str, Any]) -> dict[str, float]:
    survey = record.get("survey_score") or {}
    flat = {}
    for role, scores in survey.items():
        for name, value in (scores or {}).items():
            try:
                flat[f"{role}_{name}"] = float(value)
            except (TypeError, ValueError):
                continue
    return flat


def convert(record: dict[str, Any], split: str, conversation_id: str, where: str) -> dict[str, Any]:
    """One ESConv conversation as an escrag dialogue record."""
    if "dialog" not in record:
        raise EsconvFormatError(f"{where}: field 'dialog': missing")
    return {
        "id": conversation_id,
        "conversation_id": conversation_id,
        "situation": str(record.get("situation", "")).strip(),
        "turns": _turns(record["dialog"], where),
        "split": split,
        "emotion": record.get("emotion_type"),
        "problem": record.get("problem_type"),
        "survey": _survey(record),
    }


def _stable_split(conversation_id: str, eval_fraction: float = 0.15) -> str:
    bucket = int(hashlib.sha256(conversation_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "eval" if bucket < eval_fraction else "train"


def read_esconv(path: Path) -> Iterator[dict[str, Any]]:
    """Yield escrag dialogues from an ESConv folder (train.txt/valid.txt) or an ESConv.json file."""
    if path.is_dir():
        files = [(path / name, split) for name, split in SPLIT_FILES.items() if (path / name).exists()]
        if not files:
            raise EsconvFormatError(f"{path}: no train.txt or valid.txt")
        for file, split in files:
            for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    yield convert(json.loads(line), split, f"esconv-{split}-{n:04d}", f"{file}:{n}")
        return
    records = json.loads(path.read_text(encoding="utf-8"))
    for n, record in enumerate(records, 1):
        cid = f"esconv-{n:04d}"
        yield convert(record, _stable_split(cid), cid, f"{path}: record {n}")
