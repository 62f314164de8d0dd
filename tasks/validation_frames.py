"""Flattening of parsed JSONL records into the frames the Great Expectations suites check.

Every frame row keeps the file, line, record id and field prefix it came from, so a failed expectation
can be reported where a person can find it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from models.schema import RATING_SOURCES
from tasks.jsonl_reader import Record

_KINDS = {str: "string", bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}


def _kind(value: Any) -> str | None:
    return None if value is None else _KINDS.get(type(value), type(value).__name__)


def _put(row: dict[str, Any], data: dict[str, Any], name: str, kind: str) -> None:
    """row[name] holds the value only when its JSON type is right; row[name__type] holds its type."""
    row[f"{name}__type"] = _kind(data.get(name))
    row[name] = data.get(name) if row[f"{name}__type"] == kind else None


def _base(dataset: str, rec: Record, prefix: str = "") -> dict[str, Any]:
    return {"_dataset": dataset, "_file": str(rec.file), "_line": rec.line, "_id": rec.id, "_prefix": prefix}


_RECORD_FIELDS: dict[str, dict[str, tuple[str, bool]]] = {  # name -> (JSON type, required)
    "knowledge": {f: ("string", True) for f in ("id", "text", "strategy", "stage", "title", "source")},
    "dialogues": {
        "id": ("string", True),
        "situation": ("string", True),
        "turns": ("array", True),
        "split": ("string", True),
        "emotion": ("string", False),
        "problem": ("string", False),
        "conversation_id": ("string", False),
        "survey": ("object", False),
    },
    "preferences": {
        "id": ("string", True),
        "context": ("array", True),
        "chosen": ("string", True),
        "rejected": ("string", True),
        "rationale": ("string", False),
        "split": ("string", False),
        "conversation_id": ("string", False),
        "scores": ("object", False),
        # ESC-Preference provenance (tasks/esc_preferences.py, docs/preferences.md)
        "criteria": ("object", False),
        "stage": ("string", False),
        "chosen_strategy": ("string", False),
        "rejected_strategy": ("string", False),
        "chosen_guided": ("boolean", False),
        "rejected_guided": ("boolean", False),
        "roles": ("object", False),
        "rubric_version": ("string", False),
    },
    "ratings": {
        "id": ("string", True),
        "source": ("string", True),
        "context": ("string", True),
        "response": ("string", True),
        "labels": ("object", True),
        "split": ("string", True),
    },
}
ROLE_NAMES = ("client", "counselor", "judge")
_TURN_FIELDS = {"speaker": ("string", True), "text": ("string", True), "strategy": ("string", False)}


def _conversation(dataset: str, data: dict[str, Any]) -> tuple[str | None, str | None]:
    conv = data.get("conversation_id")
    if not isinstance(conv, str) and dataset == "dialogues":
        conv = data.get("id")
    split = data.get("split")
    return (conv, split) if isinstance(conv, str) and isinstance(split, str) else (None, None)


def _roles_named(roles: dict[str, Any]) -> bool:
    """Roles name each of client, counselor and judge with a non-empty text, and nothing else."""
    return set(roles) == set(ROLE_NAMES) and all(isinstance(v, str) and v.strip() for v in roles.values())


def _criteria_sides(criteria: dict[str, Any]) -> bool:
    """Rubric scores are {chosen?, rejected?} each mapping criteria to scores."""
    return set(criteria) <= {"chosen", "rejected"} and all(isinstance(v, dict) for v in criteria.values())


def _criteria_rows(rec: Record, criteria: dict[str, Any]) -> list[dict[str, Any]]:
    """Rubric scores {side: {criterion: n}} as rows of the scores frame (each 1-5)."""
    rows = []
    for side, values in criteria.items():
        for key, value in values.items() if isinstance(values, dict) else ():
            row = _base("preferences", rec, f"criteria.{side}.{key}") | {"lo": 1, "hi": 5, "value__type": _kind(value)}
            row["value"] = value if row["value__type"] == "number" else None
            rows.append(row)
    return rows


def _label_rows(rec: Record, labels: dict[str, Any], source: str | None) -> list[dict[str, Any]]:
    """A rating's labels as rows of the scores frame: whole numbers from 0 to its source's top level."""
    top = RATING_SOURCES.get(source or "", 2)
    rows = []
    for key, value in labels.items():
        kind = _kind(value)
        if kind == "number" and not float(value).is_integer():
            kind = "fractional number"  # levels are whole numbers
        row = _base("ratings", rec, f"labels.{key}") | {"lo": 0, "hi": top, "value__type": kind}
        row["value"] = value if kind == "number" else None
        rows.append(row)
    return rows


def _frames(records: dict[str, list[Record]], skip: set[str]) -> dict[str, pd.DataFrame]:
    """Suite name -> frame. Every frame has _row, _dataset, _file, _line, _id and _prefix (of the field)."""
    splits: dict[str, set[str]] = {}
    for dataset in ("dialogues", "preferences"):
        for rec in records.get(dataset, []):
            conv, split = _conversation(dataset, rec.data)
            if conv is not None:
                splits.setdefault(conv, set()).add(split)
    rows: dict[str, list[dict[str, Any]]] = {}
    for dataset, recs in records.items():
        if dataset in skip:
            continue
        for rec in recs:
            row = _base(dataset, rec)
            for name, (kind, _) in _RECORD_FIELDS[dataset].items():
                _put(row, rec.data, name, kind)
            rows.setdefault(dataset, []).append(row)
            if dataset == "ratings":
                rows.setdefault("scores", []).extend(_label_rows(rec, row["labels"] or {}, row["source"]))
                row["has_labels"] = None if row["labels"] is None else bool(row["labels"])
            if dataset in ("knowledge", "ratings"):
                continue
            turns_key, scores_key = ("turns", "survey") if dataset == "dialogues" else ("context", "scores")
            row[f"n_{turns_key}"] = None if row[turns_key] is None else len(row[turns_key])
            conv, _ = _conversation(dataset, rec.data)
            row["conversation_in_one_split"] = None if conv is None else len(splits[conv]) == 1
            row["_conversation"], row["_splits"] = conv, ", ".join(sorted(splits.get(conv or "", ())))
            if dataset == "preferences":
                both = row["chosen"] is not None and row["rejected"] is not None
                row["chosen_differs"] = row["chosen"].strip() != row["rejected"].strip() if both else None
                roles = row["roles"]
                row["roles_named"] = None if roles is None else _roles_named(roles)
                criteria = row["criteria"]
                row["criteria_sides"] = None if criteria is None else _criteria_sides(criteria)
                rows.setdefault("scores", []).extend(_criteria_rows(rec, row["criteria"] or {}))
            for i, turn in enumerate(row[turns_key] or []):
                trow = _base(dataset, rec, f"{turns_key}[{i}]") | {"turn__type": _kind(turn)}
                for name, (kind, _) in _TURN_FIELDS.items():
                    _put(trow, turn if isinstance(turn, dict) else {}, name, kind)
                rows.setdefault(f"{dataset.removesuffix('s')}_turns", []).append(trow)
            scores = row[scores_key] or {}
            nums = [v for v in scores.values() if _kind(v) == "number"]
            lo, hi = (0, 1) if dataset == "preferences" and nums and max(nums) <= 1 else (1, 5)
            for key, value in scores.items():
                srow = _base(dataset, rec, f"{scores_key}.{key}") | {"lo": lo, "hi": hi}
                srow["value__type"] = _kind(value)
                srow["value"] = value if srow["value__type"] == "number" else None
                rows.setdefault("scores", []).append(srow)
    frames = {name: pd.DataFrame(items) for name, items in rows.items()}
    for frame in frames.values():
        frame.insert(0, "_row", range(len(frame)))
    return frames
