"""Comparing two lineages (tasks.lineage_report.lineage): what `escrag diff` and the champion diff show.

Pure functions over the JSON-ready lineage dicts: no tracking store, no project.
"""

from __future__ import annotations

from typing import Any


def _label(report: dict[str, Any]) -> str:
    model = report["model"]
    return f"{model['name']} v{model['version']}" if model.get("version") else f"run {model['run_id']}"


def changed(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """The keys of two flat dicts whose values differ (a missing key counts), as {item, a, b} rows."""
    return [{"item": k, "a": a.get(k), "b": b.get(k)} for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]


def stage_params(report: dict[str, Any]) -> dict[str, str]:
    """Every param of every stage's run, as `STAGE: PARAM` -> value."""
    return {f"{stage}: {k}": v for stage, entry in report["stages"].items() for k, v in entry["params"].items()}


def _compared(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    index, reward = report["index"], report["reward_model"]
    return {
        "code": {"git commit": report["code"]["git_commit"], "tree dirty": report["code"]["git_dirty"]},
        "data": {"data version": report["data"]["version"], **report["data"]["datasets"]},
        "index": {"table version": index["table_version"], "data tags": ",".join(index["data_tags"])},
        "upstream_outputs": {**report["upstream_outputs"], "base model hash": report["base_model"]["hash"]},
        "reward_model": {
            "version": reward.get("version"),
            "held-out accuracy": reward.get("heldout_pairwise_accuracy"),
        },
        "params": stage_params(report),
    }


def diff_lineage(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What changed from lineage `a` to lineage `b`: per section the differing items, and the evaluation
    metrics side by side (all of them, each marked changed or not)."""
    left, right = _compared(a), _compared(b)
    sections = {name: changed(left[name], right[name]) for name in left}
    ma, mb = a["evaluation"]["metrics"], b["evaluation"]["metrics"]
    metrics = [{"metric": k, "a": ma.get(k), "b": mb.get(k), "changed": ma.get(k) != mb.get(k)}
               for k in sorted(ma.keys() | mb.keys())]  # fmt: skip
    sections["metrics"] = [{"item": m["metric"], "a": m["a"], "b": m["b"]} for m in metrics if m["changed"]]
    count = sum(len(rows) for rows in sections.values())
    return {"a": _label(a), "b": _label(b), "identical": count == 0, "differences": count,
            "sections": sections, "metrics_side_by_side": metrics}  # fmt: skip
