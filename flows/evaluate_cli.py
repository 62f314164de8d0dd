"""`escrag evaluate`: any policy against base, the champion or another policy, on any dialogues file.

The same evaluation as the pipeline's (tasks/evaluate_stage.py): the same sampled turns for both models,
the same decoding, the independent evaluators, ESConv's metrics and the composite win-rate with its
bootstrap interval and sign test. It reads the project's evaluators, index and base model.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_OK, project_from
from models.schema import SPEAKERS
from tasks.jsonl_reader import DataError, read_jsonl
from tasks.project import Project

TABLE_METRICS = ("strategy_match", "empathy_emotional_reactions", "empathy_interpretations", "empathy_explorations",
                 "risk_attended", "bleu_2", "bleu_4", "rouge_l", "distinct_1", "distinct_2", "length",
                 "format_compliance", "empty_reply")  # fmt: skip


def read_dialogues(path: Path) -> list[dict[str, Any]]:
    """Dialogues in the project's format; a bad record names the file, line, record and field."""
    dialogues = []
    for record in read_jsonl(path):
        data, rid = record.data, record.id
        if rid is None:
            raise DataError(path, record.line, "must be a string", field="id")
        turns = data.get("turns")
        if not isinstance(turns, list) or not turns:
            raise DataError(path, record.line, "must be a non-empty list of turns", record_id=rid, field="turns")
        for i, turn in enumerate(turns):
            if (
                not isinstance(turn, dict)
                or turn.get("speaker") not in SPEAKERS
                or not isinstance(turn.get("text"), str)
            ):
                why = f"needs speaker in {SPEAKERS} and text"
                raise DataError(path, record.line, why, record_id=rid, field=f"turns[{i}]")
        dialogues.append(data)
    return dialogues


@contextlib.contextmanager
def model_folder(project: Project, spec: str) -> Iterator[tuple[Path, str]]:
    """(folder, prompt style) of `base`, `champion`, a `models:/` URI or a folder."""
    from tasks import registry
    from tasks.tracking import CHAMPION, POLICY_MODEL, configure

    if spec == "base":
        yield project.artifact("base_model"), "chat"
        return
    uri = f"models:/{POLICY_MODEL}@{CHAMPION}" if spec == "champion" else spec
    if uri.startswith("models:/"):
        configure(project)
        with registry.downloaded(uri) as folder:
            yield folder, "think"
        return
    folder = Path(spec)
    if not (folder / "config.json").exists():
        raise FileNotFoundError(f"{folder}: not a model folder (no config.json), a models:/ URI, base or champion")
    yield folder, "think"


def evaluate_pair(project: Project, args: argparse.Namespace) -> dict[str, Any]:
    from models.evaluation import EvalModel
    from tasks.evaluate_stage import compare_rows, eval_examples, judge, llm_judge, load_evaluators

    dialogues = read_dialogues(args.dialogues)
    examples = eval_examples(project, dialogues, args.max_turns)
    evaluators = load_evaluators(project)
    summaries, rows = {}, {}
    with model_folder(project, args.model) as (a_dir, a_style), model_folder(project, args.against) as (b_dir, b_style):
        for name, folder, style in (("model", a_dir, a_style), ("against", b_dir, b_style)):
            summaries[name], rows[name] = judge(project, EvalModel(name, folder, style), examples, evaluators)
    return {
        "dialogues": str(args.dialogues),
        "turns": len(examples),
        "model": args.model,
        "against": args.against,
        "metrics": summaries,
        "win_rate": compare_rows(project, rows["model"], rows["against"]),
        "llm_judge": llm_judge(project, examples, rows["model"], rows["against"]),
        "evaluators": {"heldout": evaluators.heldout, "missing": evaluators.missing},
    }


def render(report: dict[str, Any]) -> str:
    a, b = report["metrics"]["model"], report["metrics"]["against"]
    lines = [f"{report['turns']} turns of {report['dialogues']}", f"{'metric':<30}{'model':>10}{'against':>10}"]
    for name in TABLE_METRICS:
        if name in a or name in b:
            cells = "".join(f"{s[name]:>10.3f}" if name in s else f"{'-':>10}" for s in (a, b))
            lines.append(f"{name:<30}{cells}")
    w = report["win_rate"]
    lines.append(
        f"win-rate of {report['model']} over {report['against']}: {w['win_rate']:.3f} "
        f"[95% CI {w['ci_low']:.3f}, {w['ci_high']:.3f}] ({w['wins']:.0f} wins, {w['ties']:.0f} ties, "
        f"{w['losses']:.0f} losses; sign test p={w['sign_test_p']:.3g})"
    )
    judge = report["llm_judge"]
    if judge["configured"]:
        lines.append(
            f"LLM judge {judge['judge']} ({judge['rubric']}, both orders): win-rate {judge['win_rate']:.3f} "
            f"[95% CI {judge['ci_low']:.3f}, {judge['ci_high']:.3f}]; {judge['unparsed']} answers unparsed"
        )
    else:
        lines.append(f"LLM judge: {judge['why']}")
    lines += [f"evaluator left out: {name}: {why}" for name, why in report["evaluators"]["missing"].items()]
    return "\n".join(lines)


def cmd_evaluate(args: argparse.Namespace) -> int:
    project = project_from(args)
    project.params  # noqa: B018 - fail on bad params before loading models
    report = evaluate_pair(project, args)
    print(json.dumps(report, indent=2) if args.json else render(report), file=sys.stdout)
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    evaluate = sub.add_parser(
        "evaluate",
        help="evaluate a policy against base, the champion or another policy on a dialogues file",
        description="Judge MODEL and AGAINST on the same sampled supporter turns of --dialogues (stratified by "
        "stage, seeded from params.yaml), with the same decoding, by the independent evaluators and ESConv's "
        "metrics, and report MODEL's composite win-rate over AGAINST with a bootstrap 95% interval over "
        "conversations and a sign test (docs/evaluation.md).",
    )
    evaluate.add_argument("--model", required=True, help="a folder or registry URI (models:/escrag-policy@champion)")
    evaluate.add_argument("--against", default="base", help="base (chat-prompted), champion, a folder or a URI")
    evaluate.add_argument("--dialogues", type=Path, required=True, help="a JSONL file of dialogues (project format)")
    evaluate.add_argument("--max-turns", type=int, default=None, help="turns to judge (default: evaluate.turns)")
    evaluate.add_argument("--json", action="store_true", help="print the metrics and win-rate as JSON")
    evaluate.set_defaults(func=cmd_evaluate)
