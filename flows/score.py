"""`escrag score IN.jsonl`: every named reward and the weighted total of completions in context.

One JSON object per input line:
  id         optional string, echoed back (the output always carries the input line too)
  context    the dialogue so far: a non-empty list of {speaker: seeker|supporter, text, strategy?}, oldest first
  response   the completion "<think>reasoning</think>reply" (or the prefilled "reasoning</think>reply"), or a
             bare reply with no think tags. A bare reply is scored as the reply by the reply rewards
             (preference, safety, strategy_fit, repetition; grounding is 0 without reasoning), while
             `format` scores the text as it is (no closed think block: 0.25).
  guidance   optional list of passage texts (or {text, strategy?} objects); [] means none. When absent it is
             retrieved from the project's guidance index with the training rule (query = the last two
             seeker turns, or the situation before the seeker has spoken; k, mode and per-strategy cap from
             params.yaml `retrieval`); without an index: no guidance, said on stderr.
  situation  optional string, used in the retrieval query
  stage      optional Exploration|Comforting|Action; when absent, `infer_stage` by position
  position   optional relative position in the conversation (0..1); when absent,
             len(context) / EXPECTED_TURNS, capped at 1

Weights come from params.yaml `grpo.rewards` (or --weights); rewards not named there are reported with
weight 0. The preference reward uses artifacts/reward_model, else the registered `escrag-reward@champion`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_BAD_INPUT, EXIT_OK, project_from
from models.dialogue import infer_stage, last_seeker_text, render_turns, retrieval_query
from models.reward_model import CONTEXT_TURNS
from models.schema import SPEAKERS, STAGES
from tasks.jsonl_reader import DataError, Record, read_jsonl
from tasks.project import Project

# ESConv conversations have 29 turns on average (median 27): the length a bare context's position assumes.
EXPECTED_TURNS = 28
CHUNK = 256  # records scored per batch


@dataclass
class ScoreInput:
    """One validated input record and what the reward functions read from it."""

    line: int
    id: str | None
    context: list[dict[str, Any]]
    response: str
    situation: str = ""
    guidance: list[str] | None = None
    guidance_strategies: list[str] = field(default_factory=list)
    guidance_source: str = "record"
    stage: str = ""

    @property
    def bare(self) -> bool:
        return "<think>" not in self.response and "</think>" not in self.response

    @property
    def completion(self) -> str:
        """What the reward functions parse: a bare reply is given an empty, closed reasoning block."""
        return f"</think>{self.response}" if self.bare else self.response


def _text_list(value: Any, fail) -> tuple[list[str], list[str]]:
    if not isinstance(value, list):
        fail("guidance", "expected a list of passage texts")
    texts, strategies = [], []
    for i, item in enumerate(value):
        text = item.get("text") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            fail(f"guidance[{i}]", "expected a non-empty passage text (or an object with 'text')")
        texts.append(text)
        if isinstance(item, dict) and isinstance(item.get("strategy"), str):
            strategies.append(item["strategy"])
    return texts, strategies


def parse_record(record: Record) -> ScoreInput:
    """Validate one record; a DataError names the file, line, record id and field."""
    data = record.data
    rid = data.get("id")

    def fail(name: str, reason: str):
        raise DataError(record.file, record.line, reason, record_id=None if rid is None else str(rid), field=name)

    if rid is not None and not isinstance(rid, str | int):
        fail("id", f"expected a string, got {type(rid).__name__}")
    context = data.get("context")
    if not isinstance(context, list) or not context:
        fail("context", "expected a non-empty list of {speaker, text} turns")
    for i, turn in enumerate(context):
        if not isinstance(turn, dict):
            fail(f"context[{i}]", "expected an object {speaker, text, strategy?}")
        if turn.get("speaker") not in SPEAKERS:
            fail(f"context[{i}].speaker", f"expected one of {', '.join(SPEAKERS)}, got {turn.get('speaker')!r}")
        if not isinstance(turn.get("text"), str) or not turn["text"].strip():
            fail(f"context[{i}].text", "expected a non-empty string")
        if "strategy" in turn and not isinstance(turn["strategy"], str):
            fail(f"context[{i}].strategy", "expected a string")
    response = data.get("response")
    if not isinstance(response, str) or not response.strip():
        fail("response", "expected a non-empty string (a completion or a bare reply)")
    situation = data.get("situation", "")
    if not isinstance(situation, str):
        fail("situation", "expected a string")
    item = ScoreInput(record.line, None if rid is None else str(rid), context, response, situation)
    if "guidance" in data:
        item.guidance, item.guidance_strategies = _text_list(data["guidance"], fail)
    stage = data.get("stage")
    if stage is not None and stage not in STAGES:
        fail("stage", f"expected one of {', '.join(STAGES)}, got {stage!r}")
    position = data.get("position")
    if position is not None and (isinstance(position, bool) or not isinstance(position, int | float)):
        fail("position", f"expected a number in [0, 1], got {position!r}")
    if position is not None and not 0 <= position <= 1:
        fail("position", f"expected a number in [0, 1], got {position!r}")
    if position is None:
        position = min(1.0, len(context) / EXPECTED_TURNS)
    item.stage = stage or infer_stage(float(position))
    return item


def read_inputs(path: Path) -> list[ScoreInput]:
    """Every record of a JSONL file, validated; the first defect raises DataError."""
    return [parse_record(record) for record in read_jsonl(path)]


def parse_weights(text: str | None, params_weights: dict[str, float]) -> dict[str, float]:
    """Weights for every reward name: `name=w,...` from --weights, else params.yaml; unnamed ones get 0."""
    from models.rewards import REWARD_NAMES, check_weights

    chosen = dict(params_weights)
    if text:
        chosen = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            try:
                chosen[name.strip()] = float(value) if sep else float("nan")
            except ValueError:
                raise ValueError(f"--weights: {part!r} is not NAME=NUMBER") from None
    check_weights(chosen)
    return {name: float(chosen.get(name, 0.0)) for name in REWARD_NAMES}


def attach_guidance(items: list[ScoreInput], project: Project) -> None:
    """Retrieve guidance for records without it; without an index they get none (said on stderr)."""
    missing = [item for item in items if item.guidance is None]
    if not missing:
        return
    index_dir = project.artifact("index")
    if not index_dir.exists():
        print(
            f"escrag score: no guidance index at {index_dir}; {len(missing)} record(s) without 'guidance' "
            "are scored with no guidance (grounding 0)",
            file=sys.stderr,
        )
        for item in missing:
            item.guidance, item.guidance_source = [], "none"
        return
    from tasks.guidance import open_retriever

    params = project.params
    retriever = open_retriever(project)
    for item in missing:
        hits = retriever.search(retrieval_query(item.situation, item.context), k=params.retrieval.k)
        item.guidance = [h["text"] for h in hits]
        item.guidance_strategies = [h["strategy"] for h in hits]
        item.guidance_source = "index"


def score_items(items: list[ScoreInput], weights: dict[str, float], resources) -> list[dict[str, Any]]:
    """One output row per item: every reward, its weight and the weighted total."""
    from models.rewards import format_score, score_many
    from models.text import parse_completion

    total_weight = sum(weights.values())
    rows = []
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        scores = score_many(
            [item.completion for item in chunk],
            guidance=[item.guidance or [] for item in chunk],
            guidance_strategies=[item.guidance_strategies for item in chunk],
            stage=[item.stage for item in chunk],
            seeker_text=[last_seeker_text(item.context) for item in chunk],
            context_text=[render_turns(item.context[-CONTEXT_TURNS:]) for item in chunk],
            weights=weights,
            resources=resources,
        )
        for item, row in zip(chunk, scores, strict=True):
            row.pop("total")
            row["format"] = format_score(parse_completion(item.response))  # a bare reply's format as it is
            total = sum(w * row[name] for name, w in weights.items()) / total_weight
            rows.append(
                {
                    "id": item.id,
                    "line": item.line,
                    "scores": {name: round(row[name], 6) for name in weights},
                    "weights": weights,
                    "total": round(total, 6),
                    "stage": item.stage,
                    "guidance_source": item.guidance_source,
                    "response_form": "bare_reply" if item.bare else "completion",
                }
            )
    return rows


def render_row(row: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps(row, ensure_ascii=False)
    parts = [f"{name} {value:.3f} (w {row['weights'][name]:g})" for name, value in row["scores"].items()]
    label = row["id"] if row["id"] is not None else f"line {row['line']}"
    return f"{label}\ttotal {row['total']:.3f}\t" + "  ".join(parts)


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "score",
        help="score completions in context: every named reward and the weighted total",
        description=__doc__.split("\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "input", type=Path, nargs="?", metavar="IN.jsonl", help="records {id?, context, response, guidance?, stage?}"
    )
    parser.add_argument(
        "--esconv-pairs",
        type=Path,
        metavar="DIR",
        help="instead of IN.jsonl: the reward model against its zero-shot start on ESConv valid swap pairs and "
        "on the empathy split (DIR holds valid.txt, or ESConv.json); see models/preference_eval.py",
    )
    parser.add_argument("--pairs", type=int, default=600, help="swap pairs for --esconv-pairs (default 600)")
    parser.add_argument("--json", action="store_true", help="one JSON object per record (default: one text line)")
    parser.add_argument("--weights", help="override params.yaml grpo.rewards, e.g. format=1,preference=0.5")
    parser.add_argument("--reward-model", help="reward model folder or models:/ URI (default: artifacts/reward_model)")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    project = project_from(args)
    if args.esconv_pairs:
        from flows.score_esconv import run_esconv_pairs

        return run_esconv_pairs(args, project)
    if args.input is None:
        print("escrag score: give IN.jsonl, or --esconv-pairs DIR", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        weights = parse_weights(args.weights, project.params.grpo.rewards)
    except ValueError as exc:
        print(f"escrag score: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.input.is_file():
        raise FileNotFoundError(f"{args.input}: no such file")
    items = read_inputs(args.input)
    attach_guidance(items, project)
    from models.rewards import RewardResources
    from tasks.reward_registry import scorer_from

    scorer = scorer_from(project, args.reward_model)
    resources = RewardResources(preference_scorer=scorer, compute=project.compute)
    for row in score_items(items, weights, resources):
        print(render_row(row, args.json))
    return EXIT_OK
