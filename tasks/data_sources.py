"""Where new data comes from: files and folders named on the command line, and public corpora (ESConv,
EPITOME, DiaSafety) converted on import.

A destination name is a plain `*.jsonl` file name (no folder, no `..`), so nothing can land outside
`data/<dataset>/`. A symlink must resolve inside the folder it was found in: the folder being added, or,
for a file argument, its own folder. Redaction replaces e-mail addresses, phone numbers and street
addresses (tasks.pii) in every free-text field of a dataset's format.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.schema import DATASETS
from tasks.jsonl_reader import DataError
from tasks.pii import redact_pii
from tasks.project import Project

logger = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.jsonl$")
_TEXT_FIELDS = {
    "knowledge": ("text", "title"),
    "dialogues": ("situation", "problem"),
    "preferences": ("chosen", "rejected", "rationale"),
    "ratings": ("context", "response"),
}
IMPORT_SOURCES = ("esconv", "epitome", "diasafety")  # `escrag data import SOURCE PATH`
_TURNS_FIELD = {"dialogues": "turns", "preferences": "context"}


class DataRejected(DataError):
    """New data refused; one line naming the file and line (line 0: the file as a whole)."""

    def __reduce__(self) -> tuple[Any, ...]:  # picklable, so Prefect can keep it in a failed task's state
        return (_rejected, (self.file, self.line, self.reason, self.record_id, self.field))


def _rejected(file: str, line: int, reason: str, record_id: str | None, field: str | None) -> DataRejected:
    return DataRejected(file, line, reason, record_id=record_id, field=field)


@dataclass(frozen=True)
class NewFile:
    dataset: str
    name: str  # the file name under data/<dataset>/
    source: str  # what the user named, for messages
    path: Path  # the bytes to add: the source, or a converted or redacted copy

    @property
    def target(self) -> str:
        return f"{self.dataset}/{self.name}"

    @property
    def shown(self) -> str:
        """The file as messages name it: the source, and the target when the names differ."""
        return self.source if Path(self.source).name == self.name else f"{self.source} [as {self.target}]"


def check_name(name: str, source: str) -> str:
    """The destination file name, or DataRejected when it is not a plain `*.jsonl` name inside data/."""
    if not NAME_RE.fullmatch(name) or name in {".", ".."}:
        raise DataRejected(
            source,
            0,
            f"target name {name!r} is not a plain *.jsonl file name (letters, digits, '.', '_', '-'; "
            "no folders, no '..'): it must stay inside data/<dataset>/",
        )
    return name


def _inside(path: Path, folder: Path, source: str) -> Path:
    if not path.exists():
        raise DataRejected(source, 0, "no such file (or a dangling symlink)")
    resolved = path.resolve()
    if not resolved.is_relative_to(folder.resolve()):
        raise DataRejected(source, 0, f"symlink resolves to {resolved}, outside the folder being added ({folder})")
    if not resolved.is_file():
        raise DataRejected(source, 0, "not a regular file")
    return resolved


def collect_sources(dataset: str, paths: list[Path], name: str | None = None) -> list[NewFile]:
    """The files named on the command line (a folder stands for its *.jsonl files) with their target names."""
    if dataset not in DATASETS:
        raise DataRejected(dataset, 0, f"unknown dataset (expected one of: {', '.join(DATASETS)})")
    found: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_dir():  # a folder (or a symlink to one) stands for its *.jsonl files
            listed = sorted(p for p in path.iterdir() if p.name.endswith(".jsonl"))
            if not listed:
                raise DataRejected(str(path), 0, "folder holds no *.jsonl files")
            found += [(_inside(p, path, str(p)), str(p)) for p in listed]
        else:
            found.append((_inside(path, path.parent, str(path)), str(path)))
    if name is not None and len(found) != 1:
        raise DataRejected(str(paths[0]) if paths else name, 0, "--as NAME needs exactly one file")
    files, seen = [], set()
    for resolved, source in found:
        target = check_name(name if name is not None else Path(source).name, source)
        if target in seen:
            raise DataRejected(source, 0, f"two new files would both be {dataset}/{target}")
        seen.add(target)
        files.append(NewFile(dataset, target, source, resolved))
    return files


def redact_record(dataset: str, record: dict[str, Any]) -> dict[str, Any]:
    """A copy with personal data replaced in every free-text field of the dataset's format."""
    out = dict(record)
    for key in _TEXT_FIELDS[dataset]:
        if isinstance(out.get(key), str):
            out[key] = redact_pii(out[key])
    turns = _TURNS_FIELD.get(dataset)
    if turns and isinstance(out.get(turns), list):
        out[turns] = [
            {**t, "text": redact_pii(t["text"])} if isinstance(t, dict) and isinstance(t.get("text"), str) else t
            for t in out[turns]
        ]
    return out


def redact_file(dataset: str, src: Path, dst: Path) -> int:
    """Copy src to dst, rewriting only the lines whose text fields hold personal data; returns how many."""
    changed = 0
    with src.open("rb") as fin, dst.open("wb") as fout:
        for raw in fin:
            body = raw.rstrip(b"\r\n")
            try:
                record = json.loads(body.decode("utf-8"))
            except ValueError:  # malformed or not UTF-8: left for validation to report
                fout.write(raw)
                continue
            redacted = redact_record(dataset, record) if isinstance(record, dict) else record
            if redacted != record:
                changed += 1
                raw = json.dumps(redacted, ensure_ascii=False).encode("utf-8") + raw[len(body) :]
            fout.write(raw)
    return changed


def _write_records(dataset: str, records: list[dict[str, Any]], out: Path, label: str) -> None:
    """Records as JSONL at out, with personal data redacted (always: public corpora, usable otherwise)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    redacted = [redact_record(dataset, r) for r in records]
    if n := sum(a != b for a, b in zip(records, redacted, strict=True)):
        logger.info("%s %s: personal data redacted in %d records", label, dataset, n)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in redacted), encoding="utf-8")


def ratings_files(project: Project, source: str, path: Path, workdir: Path, name: str | None = None) -> list[NewFile]:
    """EPITOME or DiaSafety converted (models.ratings) into ratings/NAME.jsonl (NAME defaults to the source);
    texts longer than validation allows are skipped (and logged) rather than failing the whole corpus."""
    from models.ratings import READERS, RatingsFormatError

    try:
        records = READERS[source](path, max_chars=project.params.validate_.text_max_chars)
    except (RatingsFormatError, OSError) as exc:
        raise DataRejected(str(path), 0, f"cannot convert {source}: {exc}") from None
    target = check_name(f"{name or source}.jsonl", f"ratings/{name or source}.jsonl")
    out = workdir / source / "ratings" / target
    _write_records("ratings", records, out, source)
    return [NewFile("ratings", target, f"{source} {path}", out)]


def esconv_files(project: Project, path: Path, workdir: Path, name: str | None = None) -> list[NewFile]:
    """ESConv converted (models.esconv_pairs) into dialogues/NAME.jsonl and preferences/NAME.jsonl.

    Personal data in ESConv text (a few hotline numbers and a street address) is always redacted on
    import, whatever validate.pii_policy says: the corpus is public and the rest of it is usable.
    """
    from models.esconv import EsconvFormatError
    from models.esconv_pairs import convert_esconv

    try:
        dialogues, pairs = convert_esconv(path, seed=project.params.seed)
    except (EsconvFormatError, ValueError, OSError) as exc:
        raise DataRejected(str(path), 0, f"cannot convert ESConv: {exc}") from None
    files = []
    for dataset, records in (("dialogues", dialogues), ("preferences", pairs)):
        target = check_name(f"{name or 'esconv'}.jsonl", f"{dataset}/{name or 'esconv'}.jsonl")
        out = workdir / "esconv" / dataset / target
        _write_records(dataset, records, out, "ESConv")
        files.append(NewFile(dataset, target, f"ESConv {path}", out))
    return files


def import_files(project: Project, source: str, path: Path, workdir: Path, name: str | None = None) -> list[NewFile]:
    """A public corpus converted into escrag datasets: esconv, epitome or diasafety."""
    if source == "esconv":
        return esconv_files(project, path, workdir, name)
    return ratings_files(project, source, path, workdir, name)
