"""A self-contained HTML page of a validation result: what failed, where, and a link to the GX Data Docs.

GX Data Docs pull their styles from a CDN, which an offline machine cannot reach; this page needs nothing.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
h1{font-size:1.4rem} .ok{color:#176f2c} .bad{color:#b00020}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3} tr.warning td{background:#fff8e1} tr.error td{background:#fdecea}
.counts span{display:inline-block;margin-right:1.2rem} code{font-size:.85rem}
"""


def _row(issue: Any) -> str:
    cells = (issue.file, str(issue.line), issue.record_id or "", issue.field or "", issue.message, issue.expectation)
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return f'<tr class="{html.escape(issue.severity)}">{tds}</tr>'


def write_html_report(report: Any, path: Path) -> Path:
    """Write `report.html` for a ValidationReport; returns its path."""
    verdict = '<span class="ok">passed</span>' if report.success else '<span class="bad">failed</span>'
    counts = "".join(f"<span><b>{html.escape(str(k))}</b>: {v}</span>" for k, v in report.counts.items())
    docs = ""
    if report.data_docs_index:
        link = os.path.relpath(report.data_docs_index, path.parent)
        docs = f'<p>Great Expectations Data Docs: <a href="{html.escape(link)}">{html.escape(link)}</a></p>'
    rows = "".join(_row(i) for i in report.issues) or '<tr><td colspan="6">no issues</td></tr>'
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>escrag data validation</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>escrag data validation: {verdict}</h1><p class='counts'>{counts}</p>{docs}"
        "<table><tr><th>file</th><th>line</th><th>record</th><th>field</th><th>problem</th>"
        f"<th>expectation</th></tr>{rows}</table></body></html>"
    )
    path.write_text(page, encoding="utf-8")
    return path
