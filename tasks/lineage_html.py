"""`escrag lineage --html`: one self-contained page (inline CSS, no scripts, no external assets) per lineage.

Every value is escaped; URIs are shown as text, never as links, so the page reads the same offline.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1100px;
       color: #1d1d1f; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.15em; margin-top: 1.8em;
     border-bottom: 2px solid #d0d7de; padding-bottom: .2em; } h3 { font-size: 1em; margin: 1.2em 0 .3em; }
table { border-collapse: collapse; width: 100%; margin: .4em 0; }
th, td { border: 1px solid #d0d7de; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; } td.k { width: 28%; color: #57606a; }
code, td, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
td { word-break: break-all; } pre { background: #f6f8fa; padding: .6em; overflow-x: auto; white-space: pre-wrap; }
.muted { color: #57606a; } nav a { margin-right: .8em; }
"""

SECTIONS = (
    ("model", "Model"),
    ("code", "Code"),
    ("data", "Data"),
    ("validation", "Validation"),
    ("index", "Index"),
    ("base_model", "Base model"),
    ("upstream_outputs", "Upstream outputs"),
    ("stages", "Stages, runs and params"),
    ("reward_model", "Reward model"),
    ("evaluation", "Evaluation"),
    ("promotion", "Promotion"),
    ("runs", "Runs behind each step"),
    ("champion_diff", "Differences from the champion"),
)


def _text(value: Any) -> str:
    if value is None:
        return '<span class="muted">—</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return escape(f"{value:.6g}")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return escape(", ".join(value))
    if isinstance(value, (dict, list)):
        return escape(json.dumps(value, default=str))
    return escape(str(value))


def kv_table(values: dict[str, Any]) -> str:
    """A two-column table of `values`."""
    if not values:
        return '<p class="muted">nothing recorded</p>'
    rows = "".join(f'<tr><td class="k">{escape(str(k))}</td><td>{_text(v)}</td></tr>' for k, v in values.items())
    return f"<table>{rows}</table>"


def rows_table(columns: list[str], rows: list[dict[str, Any]]) -> str:
    """A table with one row per dict, the `columns` in order."""
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_text(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _scalars(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if not isinstance(v, (dict, list)) or not v}


def _data(report: dict[str, Any]) -> str:
    data = report["data"]
    return kv_table({"data version (data.md5)": data["version"]}) + rows_table(
        ["dataset", "md5"], [{"dataset": k, "md5": v} for k, v in data["datasets"].items()]
    )


def _validation(report: dict[str, Any]) -> str:
    section = report["validation"]
    issues = rows_table(["file", "line", "record_id", "field", "message", "severity"], section.get("first_issues", []))
    counts = kv_table(section.get("counts", {}))
    scalars = {k: v for k, v in _scalars(section).items() if k not in ("counts", "first_issues")}
    return kv_table(scalars) + "<h3>Counts</h3>" + counts + "<h3>First issues</h3>" + issues


def _stages(report: dict[str, Any]) -> str:
    overview = [{"stage": name, **_scalars(entry)} for name, entry in report["stages"].items()]
    parts = [rows_table(["stage", "run_id", "started", "git_commit", "linked_by"], overview)]
    for name, entry in report["stages"].items():
        parts.append(f"<h3>{escape(name)}</h3>")
        parts.append(rows_table(["path", "md5"], [{"path": p, "md5": m} for p, m in entry["outputs"].items()]))
        parts.append(rows_table(["name", "digest", "context"], entry["inputs"]) if entry["inputs"] else "")
        parts.append(kv_table(entry["params"]) if entry["run_id"] else "")
    return "".join(parts)


def _evaluation(report: dict[str, Any]) -> str:
    section = report["evaluation"]
    detail = json.dumps(section.get("report"), indent=2, default=str)
    return (
        kv_table({"run_id": section["run_id"], "crisis suite": section.get("crisis_suite")})
        + "<h3>Metrics</h3>"
        + rows_table(["metric", "value"], [{"metric": k, "value": v} for k, v in section["metrics"].items()])
        + f"<details><summary>the evaluation report (evaluate.json)</summary><pre>{escape(detail)}</pre></details>"
    )


def _promotion(report: dict[str, Any]) -> str:
    section = report["promotion"]
    columns = ["seq", "time", "action", "from_version", "to_version", "decision", "reason", "user", "host",
               "safety_gate", "evaluated_by"]  # fmt: skip
    return kv_table(_scalars(section)) + "<h3>History</h3>" + rows_table(columns, section.get("history", []))


def diff_html(diff: dict[str, Any]) -> str:
    """The differences of a lineage diff, one table per section, and the metrics side by side."""
    if diff.get("champion") is None or diff.get("is_champion"):
        return kv_table(_scalars(diff))
    verdict = "no differences" if diff["identical"] else f"{diff['differences']} difference(s)"
    parts = [kv_table({"a": diff["a"], "b": diff["b"], "result": verdict})]
    for name, rows in diff["sections"].items():
        parts.append(f"<h3>{escape(name)}</h3>" + rows_table(["item", "a", "b"], rows))
    parts.append(
        "<h3>Metrics side by side</h3>" + rows_table(["metric", "a", "b", "changed"], diff["metrics_side_by_side"])
    )
    return "".join(parts)


RENDERERS = {
    "data": _data,
    "validation": _validation,
    "stages": _stages,
    "evaluation": _evaluation,
    "promotion": _promotion,
    "champion_diff": lambda report: diff_html(report["champion_diff"]),
}


def lineage_html(report: dict[str, Any]) -> str:
    """The whole lineage as one HTML page."""
    model = report["model"]
    title = f"{model['name']} version {model['version']}" if model.get("version") else f"run {model['run_id']}"
    body = []
    for key, heading in SECTIONS:
        if key not in report:
            continue
        content = RENDERERS[key](report) if key in RENDERERS else kv_table(report[key])
        body.append(f'<section id="{key}"><h2>{escape(heading)}</h2>{content}</section>')
    nav = " ".join(f'<a href="#{key}">{escape(h)}</a>' for key, h in SECTIONS if key in report)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Lineage of {escape(title)}</title>'
        f"<style>{STYLE}</style></head><body><h1>Lineage of {escape(title)}</h1>"
        f'<p class="muted">MODEL argument: <code>{escape(model["argument"])}</code></p>'
        f"<nav>{nav}</nav>{''.join(body)}</body></html>\n"
    )
