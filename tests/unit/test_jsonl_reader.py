"""The strict JSONL reader: every defect is a DataError that names its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.jsonl_reader import DataError, read_jsonl

GOOD = b'{"id": "kn-1", "text": "hello"}\n'


def _file(tmp_path: Path, content: bytes, name: str = "a.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def _error(path: Path, **kwargs: object) -> DataError:
    with pytest.raises(DataError) as info:
        read_jsonl(path, **kwargs)
    error = info.value
    assert error.file == str(path)
    assert str(error).startswith(f"{path}:{error.line}: ")
    assert "\n" not in str(error)
    return error


def test_reads_records_with_file_and_line(tmp_path: Path) -> None:
    path = _file(tmp_path, GOOD + b'{"id": "kn-2", "text": "caf\xc3\xa9"}\r\n{"id": 3}')
    records = read_jsonl(path)
    assert [(r.file, r.line, r.id) for r in records] == [(path, 1, "kn-1"), (path, 2, "kn-2"), (path, 3, None)]
    assert records[1].data["text"] == "café"


def test_malformed_json(tmp_path: Path) -> None:
    error = _error(_file(tmp_path, GOOD + b'{"id": "kn-2", "text": }\n'))
    assert error.line == 2
    assert "malformed JSON" in error.reason and error.record_id is None and error.field is None


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b'{"id": "a", "id": "b"}\n', "duplicate key 'id'"), (b'{"score": NaN}\n', "NaN is not valid JSON")],
)
def test_json_that_python_would_accept_is_still_malformed(tmp_path: Path, content: bytes, reason: str) -> None:
    error = _error(_file(tmp_path, content))
    assert error.line == 1 and reason in error.reason


def test_non_utf8_bytes(tmp_path: Path) -> None:
    error = _error(_file(tmp_path, GOOD + GOOD + b'{"text": "caf\xe9"}\n'))
    assert error.line == 3
    assert "invalid UTF-8" in error.reason and "0xe9" in error.reason


def test_byte_order_mark(tmp_path: Path) -> None:
    error = _error(_file(tmp_path, b"\xef\xbb\xbf" + GOOD))
    assert error.line == 1 and "byte-order mark" in error.reason


def test_empty_file(tmp_path: Path) -> None:
    error = _error(_file(tmp_path, b""))
    assert error.line == 1 and "empty" in error.reason


def test_blank_line(tmp_path: Path) -> None:
    error = _error(_file(tmp_path, GOOD + b"  \n" + GOOD))
    assert error.line == 2 and "blank line" in error.reason


def test_binary_file(tmp_path: Path) -> None:
    error = _error(_file(tmp_path, GOOD + b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
    assert error.line == 4 and "binary" in error.reason  # "\x89PNG\r\n", "\x1a\n", then NULs


def test_nul_byte_after_the_sniffed_head(tmp_path: Path) -> None:
    error = _error(_file(tmp_path, GOOD * 400 + b'{"id": "x\x00"}\n'))
    assert error.line == 401 and "binary" in error.reason


def test_line_over_the_limit_is_refused_without_loading_it(tmp_path: Path) -> None:
    body = b'{"id": "big", "text": "' + b"x" * (20 * 1024 * 1024) + b'"}'
    path = _file(tmp_path, GOOD + body + b"\n" + GOOD)
    error = _error(path)
    assert error.line == 2 and "over the limit of 1000000 bytes" in error.reason
    assert str(len(body)) in error.reason
    errors: list[DataError] = []
    records = read_jsonl(path, errors=errors)
    assert [r.line for r in records] == [1, 3] and [e.line for e in errors] == [2]


def test_line_limit_is_configurable_and_excludes_the_terminator(tmp_path: Path) -> None:
    line = b'{"text": "' + b"y" * 88 + b'"}'  # exactly 100 bytes
    assert len(read_jsonl(_file(tmp_path, line + b"\r\n" + line), max_line_bytes=100)) == 2
    assert _error(_file(tmp_path, line + b"\n", "b.jsonl"), max_line_bytes=99).line == 1


@pytest.mark.parametrize(
    ("content", "kind"), [(b"[1, 2]", "an array"), (b'"text"', "a string"), (b"42", "a number"), (b"null", "null")]
)
def test_non_object_line(tmp_path: Path, content: bytes, kind: str) -> None:
    error = _error(_file(tmp_path, GOOD + content + b"\n"))
    assert error.line == 2 and f"line is {kind}, expected a JSON object" in error.reason


def test_collect_mode_reports_every_bad_line_and_keeps_the_good_ones(tmp_path: Path) -> None:
    path = _file(tmp_path, GOOD + b"{oops\n" + GOOD + b"[]\n" + b"\xff\n" + GOOD)
    errors: list[DataError] = []
    records = read_jsonl(path, errors=errors)
    assert [r.line for r in records] == [1, 3, 6]
    assert [e.line for e in errors] == [2, 4, 5]


def test_message_is_one_line_with_record_and_field() -> None:
    error = DataError(
        "data/knowledge/a.jsonl",
        12,
        "unknown strategy 'Foo'\n(expected one of ...)",
        record_id="kn-1",
        field="strategy",
    )
    assert str(error) == (
        "data/knowledge/a.jsonl:12: record 'kn-1': field 'strategy': unknown strategy 'Foo' (expected one of ...)"
    )
    assert error.to_dict()["line"] == 12
