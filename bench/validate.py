"""Validation throughput: validate_data (strict read + Great Expectations suites) against a plain pandas load.

Run: .venv/bin/python bench/validate.py [--esconv ../shared/data/esconv] [--repeats 1 10]
ESConv is converted (models.esconv_pairs, personal data redacted as `escrag data import` does) and written,
repeated N times with fresh ids, into a temporary data folder beside the starter knowledge passages. Both
sides read the same files; the ratio is pandas records/s over validate_data records/s, measured side by
side in this run. Prints one table.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd

from models.esconv_pairs import convert_esconv
from tasks.data_sources import redact_record

ROOT = Path(__file__).resolve().parents[1]


def write_data(folder: Path, esconv: Path, repeats: int) -> dict[str, int]:
    """starter knowledge + ESConv dialogues and pairs ×repeats (ids and conversation ids made unique)."""
    dialogues, pairs = convert_esconv(esconv)
    shutil.copytree(ROOT / "starter_data" / "knowledge", folder / "knowledge")
    knowledge = (folder / "knowledge").glob("*.jsonl")
    counts = {"knowledge": sum(len(path.read_text(encoding="utf-8").splitlines()) for path in knowledge)}
    for dataset, records in (("dialogues", dialogues), ("preferences", pairs)):
        (folder / dataset).mkdir()
        with (folder / dataset / "esconv.jsonl").open("w", encoding="utf-8") as out:
            for r in range(repeats):
                for record in records:
                    copy = redact_record(dataset, record) | {"id": f"{record['id']}-r{r}"}
                    copy["conversation_id"] = f"{record.get('conversation_id', record['id'])}-r{r}"
                    out.write(json.dumps(copy, ensure_ascii=False) + "\n")
        counts[dataset] = len(records) * repeats
    return counts


def pandas_load(folder: Path) -> tuple[float, int]:
    start = time.perf_counter()
    rows = sum(len(pd.read_json(path, lines=True)) for path in sorted(folder.glob("*/*.jsonl")))
    return time.perf_counter() - start, rows


def escrag_validate(folder: Path, report: Path) -> tuple[float, bool]:
    from tasks.validation import validate_data

    start = time.perf_counter()
    result = validate_data(folder, report)
    return time.perf_counter() - start, result.success


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--esconv", type=Path, default=ROOT.parent / "shared" / "data" / "esconv")
    parser.add_argument("--repeats", type=int, nargs="+", default=[1, 10])
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("tasks.validation").setLevel(logging.CRITICAL)  # issues are in report.json

    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        shutil.copytree(ROOT / "starter_data", warm)
        escrag_validate(warm, Path(tmp) / "warm-report")  # imports GX and builds its first context
        rows = []
        for repeats in args.repeats:
            folder = Path(tmp) / f"x{repeats}"
            counts = write_data(folder, args.esconv, repeats)
            size = sum(p.stat().st_size for p in folder.glob("*/*.jsonl")) / 1e6
            pandas_s, loaded = pandas_load(folder)
            escrag_s, ok = escrag_validate(folder, Path(tmp) / f"report-{repeats}")
            total = sum(counts.values())
            assert loaded == total, (loaded, total)
            rows.append((f"ESConv x{repeats}", total, size, pandas_s, escrag_s, ok))
            shutil.rmtree(folder)

    print(
        f"{'data':<11} {'records':>8} {'MB':>6} {'pandas s':>9} {'pandas rec/s':>13} "
        f"{'validate s':>11} {'validate rec/s':>15} {'ratio':>7} {'valid':>6}"
    )
    for name, total, size, pandas_s, escrag_s, ok in rows:
        print(
            f"{name:<11} {total:>8} {size:>6.1f} {pandas_s:>9.2f} {total / pandas_s:>13,.0f} "
            f"{escrag_s:>11.2f} {total / escrag_s:>15,.0f} {escrag_s / pandas_s:>6.1f}x {str(ok):>6}"
        )
    print("ratio = validate_data time / pandas time on the same files (how many times slower validation is)")


if __name__ == "__main__":
    main()
