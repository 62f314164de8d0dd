"""A strict JSON Lines reader: every record keeps its file and 1-based line, every defect is a DataError.

Detects a binary file (NUL bytes), an empty file, bytes that are not UTF-8, a line longer than a limit,
a blank line, a line that is not JSON (or uses NaN/Infinity, or repeats a key), and a line that is not
a JSON object.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 1_000_000
MAX_ERRORS_PER_FILE = 100
_SNIFF_BYTES = 8192
_DRAIN_CHUNK = 1 << 20


class DataError(ValueError):
    """One defect in a data file, located by file and 1-based line (and record id and field if known)."""

    def __init__(
        self,
        file: str | Path,
        line: int,
        reason: str,
        *,
        record_id: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file)
        self.line = line
        self.record_id = record_id
        self.field = field
        self.reason = " ".join(str(reason).split())  # always one line
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [f"{self.file}:{self.line}:"]
        if self.record_id is not None:
            parts.append(f"record {self.record_id!r}:")
        if self.field is not None:
            parts.append(f"field {self.field!r}:")
        parts.append(self.reason)
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "record_id": self.record_id,
            "field": self.field,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Record:
    """One parsed JSON object and where it came from."""

    file: Path
    line: int
    data: dict[str, Any]

    @property
    def id(self) -> str | None:
        value = self.data.get("id")
        return value if isinstance(value, str) else None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


_JSON_KINDS = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}


def parse_line(raw: bytes, file: str | Path, line: int) -> dict[str, Any]:
    """Decode and parse one line (without its terminator) into a JSON object, or raise DataError."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        reason = f"invalid UTF-8: byte 0x{bad} at byte offset {exc.start} of the line"
        raise DataError(file, line, reason) from None
    if line == 1 and text.startswith("\ufeff"):
        raise DataError(file, line, "file starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
    if not text.strip():
        raise DataError(file, line, "blank line (JSON Lines allows no empty lines)")
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise DataError(file, line, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # duplicate key, NaN/Infinity
        raise DataError(file, line, f"malformed JSON: {exc}") from None
    if not isinstance(value, dict):
        kind = "null" if value is None else _JSON_KINDS.get(type(value), type(value).__name__)
        raise DataError(file, line, f"line is {kind}, expected a JSON object")
    return value


def _read_line(handle: Any, max_line_bytes: int) -> tuple[bytes | None, int]:
    """Return (content without terminator, or None when over the limit; total content length)."""
    limit = max_line_bytes + 2  # room for "\r\n"
    chunk = handle.readline(limit)
    if len(chunk) == limit and not chunk.endswith(b"\n"):
        size = len(chunk)
        while True:  # drain the rest of the over-long line without holding it in memory
            more = handle.readline(_DRAIN_CHUNK)
            size += len(more)
            if not more or more.endswith(b"\n"):
                return None, size - (1 if more.endswith(b"\n") else 0)
    content = chunk[:-2] if chunk.endswith(b"\r\n") else chunk[:-1] if chunk.endswith(b"\n") else chunk
    return (content if len(content) <= max_line_bytes else None), len(content)


def read_jsonl(
    path: str | Path,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    errors: list[DataError] | None = None,
) -> list[Record]:
    """Read a JSON Lines file strictly.

    With ``errors=None`` the first defect raises DataError. With a list, defects are appended to it and
    reading goes on with the next line (a binary or empty file stops the file), so one pass reports all.
    """
    path = Path(path)
    found: list[DataError] = []

    def fail(error: DataError) -> None:
        if errors is None:
            raise error
        found.append(error)
        errors.append(error)

    records: list[Record] = []
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        if not head:
            fail(DataError(path, 1, "file is empty (expected one JSON object per line)"))
            return records
        if b"\x00" in head:
            line = head[: head.index(b"\x00")].count(b"\n") + 1
            fail(DataError(path, line, "binary file: contains NUL bytes, not UTF-8 JSON Lines text"))
            return records
        handle.seek(0)
        line = 0
        while True:
            start = handle.tell()
            content, size = _read_line(handle, max_line_bytes)
            if handle.tell() == start:
                break
            line += 1
            if len(found) >= MAX_ERRORS_PER_FILE:
                fail(DataError(path, line, f"stopped after {MAX_ERRORS_PER_FILE} errors in this file"))
                break
            if content is None:
                fail(DataError(path, line, f"line is {size} bytes, over the limit of {max_line_bytes} bytes"))
                continue
            if b"\x00" in content:
                fail(DataError(path, line, "binary file: contains NUL bytes, not UTF-8 JSON Lines text"))
                break
            try:
                records.append(Record(path, line, parse_line(content, path, line)))
            except DataError as exc:
                fail(exc)
    logger.debug("read %d records from %s (%d errors)", len(records), path, len(found))
    return records
