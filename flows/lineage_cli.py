"""`escrag lineage MODEL` (the whole chain behind a model) and `escrag diff MODEL_A MODEL_B` (what changed)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_BAD_INPUT, EXIT_OK, project_from

MODEL_HELP = "models:/escrag-policy/VERSION, models:/escrag-policy@ALIAS (e.g. @champion) or an MLflow run id"
SHOWN_METRICS = ("eval.candidate.", "eval.win_rate_vs_base.")  # the text report's metrics; --json has them all


def _short(value: Any, width: int = 12) -> str:
    text = "-" if value is None else str(value)
    return text[:width] if len(text) == 32 or len(text) == 40 else text  # run ids and commits shortened


def _float(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else ("-" if value is None else str(value))


def _head(report: dict) -> list[str]:
    model, code, data = report["model"], report["code"], report["data"]
    named = f"{model['name']} version {model['version']}" if model["version"] else "a run with no registered version"
    aliases = f" (aliases: {', '.join(model['aliases'])})" if model["aliases"] else ""
    lines = [
        f"lineage of {model['argument']}: {named}{aliases}",
        f"  model run       {model['run_id']} (stage {model['stage']}, started {model['started']})",
        f"  weights sha256  {model['weights_sha256'] or '-'}",
        f"code              git {code['git_commit']}{' (tree dirty)' if code['git_dirty'] else ' (clean tree)'}",
        f"data version      {data['version']}",
    ]
    return lines + [f"  data/{name:<14}{md5}" for name, md5 in data["datasets"].items()]


def _inputs(report: dict) -> list[str]:
    val, index, reward = report["validation"], report["index"], report["reward_model"]
    verdict = {True: "passed", False: "FAILED", None: "not found"}[val["success"]]
    counts = ", ".join(f"{k} {v}" for k, v in val.get("counts", {}).items())
    lines = [f"validation        {verdict} (run {val['run_id'] or '-'}; {val.get('issues', 0)} issues; {counts})"]
    if val.get("report_html"):
        lines.append(f"  report          {val['report_html']}")
    tags = ", ".join(index["data_tags"]) or "none found in artifacts/index"
    lines.append(f"index             table {index['table']} version {index['table_version']}, tags: {tags}")
    lines.append(f"base model        {report['base_model']['hash']}")
    accuracy = _float(reward.get("heldout_pairwise_accuracy"))
    lines.append(
        f"reward model      {reward['name']} version {reward.get('version') or '-'}, held-out pairwise accuracy "
        f"{accuracy} (run {reward.get('run_id') or '-'})"
    )
    lines.append("upstream outputs (dvc.lock md5s the model run read)")
    return lines + [f"  {path:<36}{md5}" for path, md5 in report["upstream_outputs"].items()]


def _stages(report: dict) -> list[str]:
    lines = ["stages"]
    for name, entry in report["stages"].items():
        lines.append(f"  {name:<15} run {entry['run_id'] or '-'}: {entry['linked_by']}")
        ours = {k: v for k, v in entry["params"].items() if "." in k}  # escrag's params are `section.name`
        lines += [f"      {k} = {v}" for k, v in ours.items()]
        if len(ours) < len(entry["params"]):
            lines.append(f"      and {len(entry['params']) - len(ours)} trainer arguments logged by TRL (--json)")
        lines += [f"      input {i['name']} digest {i['digest']} ({i['context']})" for i in entry["inputs"]]
        lines += [f"      output {path} {md5}" for path, md5 in entry["outputs"].items() if md5]
    return lines


def _outcome(report: dict) -> list[str]:
    evaluation, promotion = report["evaluation"], report["promotion"]
    metrics = {k: v for k, v in evaluation["metrics"].items() if k.startswith(SHOWN_METRICS)}
    lines = [
        f"evaluation        run {evaluation['run_id'] or '-'} ({len(evaluation['metrics'])} metrics; --json has all)"
    ]
    lines += [f"  {k:<44}{_float(v)}" for k, v in metrics.items()]
    if evaluation.get("crisis_suite"):
        lines.append(f"  {evaluation['crisis_suite'].splitlines()[0]}")
    lines.append(f"promotion         gate decision: {promotion['decision'] or 'none recorded'}")
    lines += [f"  {line}" for line in (promotion["reason"] or "").splitlines()]
    if promotion.get("latest_decision"):
        first = (promotion["latest_reason"] or "").splitlines()[:1]
        lines.append(f"  latest decision: {promotion['latest_decision']} ({first[0] if first else 'no reason'})")
    lines.append(f"  aliases now: {', '.join(promotion.get('aliases', [])) or 'none'}")
    for e in promotion["history"]:
        lines.append(f"  history #{e['seq']} {e['time']} {e['action']} {e['from_version']} -> {e['to_version']}: "
                     f"{e['decision']} by {e['user']}@{e['host']} (safety gate {e['safety_gate']})")  # fmt: skip
    lines.append("runs              " + ", ".join(f"{k} {_short(v)}" for k, v in report["runs"].items()))
    return lines


def render_diff(diff: dict, *, metrics: bool = True) -> list[str]:
    """A diff as text: the differing items per section, then (with `metrics`) every metric side by side."""
    verdict = "no differences" if diff["identical"] else f"{diff['differences']} difference(s)"
    lines = [f"{diff['a']} -> {diff['b']}: {verdict}"]
    shown = {k: rows for k, rows in diff["sections"].items() if not (metrics and k == "metrics")}  # metrics: table
    for section, rows in shown.items():
        lines += [f"  {section}: {r['item']}: {_float(r['a'])} -> {_float(r['b'])}" for r in rows]
    if metrics and diff["metrics_side_by_side"]:
        width = max(12, len(diff["a"]), len(diff["b"])) + 2
        lines.append(f"  {'metric':<44}{diff['a']:>{width}}{diff['b']:>{width}}")
        for m in diff["metrics_side_by_side"]:
            mark = "  *" if m["changed"] else ""
            lines.append(f"  {m['metric']:<44}{_float(m['a']):>{width}}{_float(m['b']):>{width}}{mark}")
    return lines


def _against_champion(diff: dict) -> list[str]:
    if diff.get("champion") is None:
        return [f"differences from champion: {diff.get('note', 'no champion')}"]
    if diff.get("is_champion"):
        return [f"differences from champion: none (this is the champion, version {diff['champion']})"]
    return ["differences from champion:", *render_diff(diff, metrics=False)]


def render_lineage(report: dict) -> str:
    """The lineage as text; the differences from the champion without the side-by-side metrics."""
    tail = _against_champion(report.get("champion_diff", {}))
    return "\n".join([*_head(report), *_inputs(report), *_stages(report), *_outcome(report), *tail])


def _bad(command: str, argument: str, error: Exception) -> int:
    print(f"escrag {command}: {argument} {error}", file=sys.stderr)
    return EXIT_BAD_INPUT


def cmd_lineage(args: argparse.Namespace) -> int:
    from tasks.lineage_html import lineage_html
    from tasks.lineage_report import ModelArgumentError, lineage

    project = project_from(args)
    try:
        report = lineage(project, args.model)
    except ModelArgumentError as error:
        return _bad("lineage", "MODEL", error)
    if args.html:
        try:
            args.html.write_text(lineage_html(report), encoding="utf-8")
        except OSError as error:
            return _bad("lineage", "--html", error)
        print(f"lineage of {args.model} written to {args.html}")
    else:
        print(json.dumps(report, indent=2, default=str) if args.json else render_lineage(report))
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from tasks.lineage_diff import diff_lineage
    from tasks.lineage_report import ModelArgumentError, lineage

    project = project_from(args)
    reports = []
    for name, model in (("MODEL_A", args.model_a), ("MODEL_B", args.model_b)):
        try:
            reports.append(lineage(project, model, against_champion=False))
        except ModelArgumentError as error:
            return _bad("diff", name, error)
    diff = diff_lineage(*reports)
    print(json.dumps(diff, indent=2, default=str) if args.json else "\n".join(render_diff(diff)))
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    lineage = sub.add_parser(
        "lineage",
        help="the whole chain behind a model: code, data, validation, index, params, reward model, evaluation",
        description="Print everything a registered model (or run) was made from, read back from the MLflow "
        "tracking store: the git commit and whether the tree was dirty; the data version (data.md5) and the "
        "md5 of every dataset; the validation result and report; the LanceDB table version and its data tag; "
        "the base-model hash and the dvc.lock md5 of every upstream output; every param of every stage's run, "
        "with how each run was linked to the model; the reward-model version and its held-out accuracy; the "
        "evaluation report and metrics; the promotion decision and its history; the run behind each step; and "
        "what differs from the current champion. Exit 0, or 2 for a MODEL that is malformed or names no "
        "registered version, alias or run. docs/lineage.md explains each part.",
    )
    lineage.add_argument("model", metavar="MODEL", help=MODEL_HELP)
    output = lineage.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the lineage as one JSON object")
    output.add_argument(
        "--html", type=Path, metavar="FILE", help="write one self-contained HTML page (readable offline) to FILE"
    )
    lineage.set_defaults(func=cmd_lineage)

    diff = sub.add_parser(
        "diff",
        help="what changed between two models: data, params, code, index, metrics",
        description="Compare the lineages of two models (each a registry URI or run id): the md5 of each "
        "dataset, every stage param that differs, the git commit, the index version and data tags, the "
        "upstream output md5s and the reward-model version; then every evaluation metric side by side, "
        "changed ones marked *. Exit 0 (whether or not they differ), 2 for a bad MODEL_A or MODEL_B.",
    )
    diff.add_argument("model_a", metavar="MODEL_A", help=MODEL_HELP)
    diff.add_argument("model_b", metavar="MODEL_B", help=MODEL_HELP)
    diff.add_argument("--json", action="store_true", help="print the differences as one JSON object")
    diff.set_defaults(func=cmd_diff)
