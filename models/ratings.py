"""Human-rated replies for the independent evaluators: EPITOME and DiaSafety into escrag's `ratings` format.

One record per rated (context, response) pair:

    {"id", "source": "epitome" | "diasafety", "context", "response", "labels": {name: int}, "split"}

- EPITOME (Sharma et al., 2020, Reddit): the three mechanism files rate the same seeker-post/response
  pairs, one mechanism each (levels 0/1/2); they are joined on (sp_id, rp_id) into one record with up to
  three labels (a pair repeated with different levels keeps the lower). EPITOME has no splits, so a
  stable hash of the *seeker post* decides (80/10/10), which keeps every response to one post in one split.
- DiaSafety (Sun et al., 2022): one label per record, the snake-cased category, 1 for "Unsafe" and 0 for
  "Safe"; its own train/val/test files give the splits (val → eval).

Readers raise RatingsFormatError naming the file, the record and the field. The exceptions are skipped
and logged, since they carry no rating a reply-sized evaluator can learn from: a record whose context or
response is empty (DiaSafety's files hold 3) or longer than `max_chars` (EPITOME holds 3 responses of
4,000-9,200 characters; validation's `text_max_chars` is the limit the importer passes).
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from models.schema import EPITOME_MECHANISMS

EPITOME_FILES = {
    "emotional_reactions": "emotional-reactions-reddit.csv",
    "interpretations": "interpretations-reddit.csv",
    "explorations": "explorations-reddit.csv",
}
logger = logging.getLogger(__name__)

DIASAFETY_FILES = {"train.json": "train", "val.json": "eval", "test.json": "test"}
DIASAFETY_LABELS = {"Safe": 0, "Unsafe": 1}
EPITOME_LEVELS = (0, 1, 2)


class RatingsFormatError(ValueError):
    """A source record that cannot be converted; the message names file, record and field."""


def label_name(category: str) -> str:
    """DiaSafety's category as a label name: "Risk Ignorance" → "risk_ignorance"."""
    return re.sub(r"[^a-z0-9]+", "_", category.strip().lower()).strip("_")


def stable_split(key: str) -> str:
    """train/eval/test at 80/10/10 by a hash of key: the same key always lands in the same split."""
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if bucket < 0.1 else "eval" if bucket < 0.2 else "train"


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RatingsFormatError(f"{where}: field '{key}': missing or empty")
    return value.strip()


def _epitome_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        for n, row in enumerate(csv.DictReader(handle), 2):  # line 1 is the header
            yield f"{path}: line {n}", row


def _too_long(record: dict[str, Any], max_chars: int | None) -> bool:
    return max_chars is not None and max(len(record["context"]), len(record["response"])) > max_chars


def read_epitome(folder: Path, max_chars: int | None = None) -> list[dict[str, Any]]:
    """EPITOME's three mechanism files joined per (seeker post, response) pair."""
    missing = [name for name in EPITOME_FILES.values() if not (folder / name).is_file()]
    if missing:
        raise RatingsFormatError(f"{folder}: missing {', '.join(missing)} (expected EPITOME's Reddit CSV files)")
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    conflicts = 0
    for mechanism in EPITOME_MECHANISMS:
        for where, row in _epitome_rows(folder / EPITOME_FILES[mechanism]):
            key = (_text(row, "sp_id", where), _text(row, "rp_id", where))
            level = str(row.get("level", "")).strip()
            if level not in {str(v) for v in EPITOME_LEVELS}:
                raise RatingsFormatError(f"{where}: field 'level': expected 0, 1 or 2, got {level!r}")
            record = pairs.setdefault(
                key,
                {
                    "id": f"epitome-{key[0]}-{key[1]}",
                    "source": "epitome",
                    "context": _text(row, "seeker_post", where),
                    "response": _text(row, "response_post", where),
                    "labels": {},
                    "split": stable_split(key[0]),
                },
            )
            earlier = record["labels"].get(mechanism)
            if earlier is not None and earlier != int(level):
                conflicts += 1
            # EPITOME repeats ~60 rows per file, 25 with a different level: keep the lower (never over-credit).
            record["labels"][mechanism] = min(int(level), earlier if earlier is not None else 2)
    if conflicts:
        logger.warning("EPITOME: %d repeated pairs rated differently; the lower level kept", conflicts)
    long = [r["id"] for r in pairs.values() if _too_long(r, max_chars)]
    if long:
        logger.warning("EPITOME: %d pairs longer than %d characters skipped: %s", len(long), max_chars, long)
    return [r for r in pairs.values() if not _too_long(r, max_chars)]


def read_diasafety(folder: Path, max_chars: int | None = None) -> list[dict[str, Any]]:
    """DiaSafety's train/val/test files, every category, with their own splits."""
    found = [(folder / name, split) for name, split in DIASAFETY_FILES.items() if (folder / name).is_file()]
    if not found:
        raise RatingsFormatError(f"{folder}: no train.json, val.json or test.json (expected DiaSafety)")
    records = []
    skipped: list[str] = []
    for path, split in found:
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise RatingsFormatError(f"{path}: not JSON ({exc})") from None
        if not isinstance(items, list):
            raise RatingsFormatError(f"{path}: expected a JSON list of records")
        for n, item in enumerate(items, 1):
            where = f"{path}: record {n}"
            if not isinstance(item, dict):
                raise RatingsFormatError(f"{where}: expected an object")
            verdict = item.get("label")
            if verdict not in DIASAFETY_LABELS:
                raise RatingsFormatError(f"{where}: field 'label': expected Safe or Unsafe, got {verdict!r}")
            if not all(isinstance(item.get(k), str) and item[k].strip() for k in ("context", "response")):
                skipped.append(where)
                continue
            records.append(
                {
                    "id": f"diasafety-{split}-{n:05d}",
                    "source": "diasafety",
                    "context": _text(item, "context", where),
                    "response": _text(item, "response", where),
                    "labels": {label_name(_text(item, "category", where)): DIASAFETY_LABELS[verdict]},
                    "split": split,
                }
            )
    if skipped:
        logger.warning("DiaSafety: %d records with an empty context or response skipped: %s", len(skipped), skipped)
    long = [r["id"] for r in records if _too_long(r, max_chars)]
    if long:
        logger.warning("DiaSafety: %d records longer than %d characters skipped: %s", len(long), max_chars, long)
    return [r for r in records if not _too_long(r, max_chars)]


READERS = {"epitome": read_epitome, "diasafety": read_diasafety}
