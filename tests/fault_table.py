"""The fault suite's table, printed at the end of the session: one row per fault test (tests/faults), with
what was injected, what escrag did, what was checked, and pass or fail. The hooks live here, imported by
tests/conftest.py, because under pytest-xdist only the controller prints and it loads no sub-folder conftest.
"""

from __future__ import annotations

import textwrap

HEADERS = ("fault injected", "what escrag did", "what was checked")
WIDTHS = (36, 56, 48)
_ROWS: list[dict] = []


def pytest_runtest_logreport(report) -> None:
    row = dict(report.user_properties).get("fault")
    if row is not None and (report.when == "call" or report.outcome != "passed"):
        _ROWS.append({"row": row, "outcome": report.outcome, "when": report.when})


def pytest_terminal_summary(terminalreporter) -> None:
    if not _ROWS:
        return
    terminalreporter.section("fault suite")
    header = "  ".join(f"{h:{w}}" for h, w in zip(HEADERS, WIDTHS, strict=True))
    terminalreporter.write_line(f"{'#':>2}  {header}  result")
    for found in sorted(_ROWS, key=lambda r: r["row"]["number"]):
        row = found["row"]
        result = "pass" if found["outcome"] == "passed" else f"FAIL ({found['when']})"
        texts = (row["injected"], row["did"], row["checked"])
        cells = [textwrap.wrap(text, w) or [""] for text, w in zip(texts, WIDTHS, strict=True)]
        for i in range(max(map(len, cells))):
            parts = [f"{(c[i] if i < len(c) else ''):{w}}" for c, w in zip(cells, WIDTHS, strict=True)]
            lead, tail = (f"{row['number']:>2}", result) if i == 0 else ("", "")
            terminalreporter.write_line(f"{lead:>2}  " + "  ".join(parts) + f"  {tail}")
