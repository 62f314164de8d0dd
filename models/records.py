"""Reading escrag datasets (already validated) from their JSONL folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def dataset_files(data_dir: Path, dataset: str) -> list[Path]:
    return sorted((data_dir / dataset).glob("*.jsonl"))


def load_records(data_dir: Path, dataset: str) -> list[dict[str, Any]]:
    """All records of one dataset, files in name order, lines in file order."""
    records: list[dict[str, Any]] = []
    for path in dataset_files(data_dir, dataset):
        with path.open(encoding="utf-8") as handle:
            records.extend(json.loads(line) for line in handle if line.strip())
    return records


def dialogues_of_split(data_dir: Path, split: str) -> list[dict[str, Any]]:
    return [d for d in load_records(data_dir, "dialogues") if d.get("split") == split]
