"""`escrag search`: query the guidance index the way training and evaluation do."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_BAD_INPUT, EXIT_OK, project_from
from models.schema import KNOWLEDGE_STAGES, STRATEGIES
from tasks.project import Project


def dialogue_query(path: Path) -> str:
    """The documented query rule applied to the first dialogue record of a JSONL file."""
    from models.dialogue import retrieval_query
    from tasks.jsonl_reader import DataError, read_jsonl

    first = read_jsonl(path)[0]  # read_jsonl raises DataError on an empty or malformed file
    record = first.data
    turns = record.get("turns")
    if not isinstance(turns, list) or not all(isinstance(t, dict) and "speaker" in t and "text" in t for t in turns):
        raise DataError(
            path, first.line, "expected a list of {speaker, text} objects", record_id=record.get("id"), field="turns"
        )
    return retrieval_query(str(record.get("situation", "")), turns)


def search(
    project: Project,
    query: str,
    k: int,
    mode: str | None,
    stage: str | None,
    strategy: str | None,
    max_per_strategy: int | None = None,
) -> list[dict[str, Any]]:
    """`mode` and `max_per_strategy` default (None) to the project's `retrieval` settings."""
    from tasks.guidance import open_retriever

    hits = open_retriever(project).search(
        query, k=k, mode=mode, stage=stage, strategy=strategy, max_per_strategy=max_per_strategy
    )
    return [{key: hit[key] for key in ("id", "strategy", "stage", "title", "text", "score")} for hit in hits]


def render(hits: list[dict[str, Any]], as_json: bool) -> str:
    if as_json:
        return json.dumps(hits, indent=2, ensure_ascii=False)
    lines = []
    for rank, hit in enumerate(hits, 1):
        lines.append(f"{rank}. [{hit['score']:.3f}] {hit['title']} ({hit['strategy']}; {hit['stage']}) {hit['id']}")
        lines.append(f"   {hit['text']}")
    return "\n".join(lines) or "no passages"


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "search",
        help="search the guidance index (vector, full-text or hybrid)",
        description="Search the guidance passages. The query is TEXT, or built from a dialogue record with the "
        "same rule training uses: the last two seeker turns (the situation only before the seeker has spoken). "
        "Mode and the per-strategy cap default to params.yaml's `retrieval` section.",
    )
    parser.add_argument("text", nargs="?", help="query text (omit with --dialogue)")
    parser.add_argument("--dialogue", type=Path, help="build the query from the first record of this JSONL file")
    parser.add_argument("--k", type=int, default=5, help="passages to return (default 5)")
    parser.add_argument(
        "--mode",
        choices=("vector", "fts", "hybrid"),
        help="vector (MiniLM cosine), fts (BM25) or hybrid (reciprocal-rank fusion); default: retrieval.mode",
    )
    parser.add_argument(
        "--max-per-strategy",
        type=int,
        metavar="N",
        help="at most N passages of one strategy (0: no limit); default: retrieval.max_per_strategy",
    )
    parser.add_argument("--stage", choices=KNOWLEDGE_STAGES, help="only this stage (and stage-free 'any')")
    parser.add_argument("--strategy", choices=STRATEGIES, help="only passages of this strategy")
    parser.add_argument(
        "--json", action="store_true", help="print a JSON list of {id, strategy, stage, title, text, score}"
    )
    parser.set_defaults(func=_run)


def _run(args) -> int:

    if bool(args.text) == bool(args.dialogue):
        print("escrag search: give TEXT or --dialogue FILE, not both", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.k < 1:
        print("escrag search: --k must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.max_per_strategy is not None and args.max_per_strategy < 0:
        print("escrag search: --max-per-strategy must be 0 or more", file=sys.stderr)
        return EXIT_BAD_INPUT
    query = args.text or dialogue_query(args.dialogue)
    project = project_from(args)
    hits = search(project, query, args.k, args.mode, args.stage, args.strategy, args.max_per_strategy)
    print(render(hits, args.json))
    return EXIT_OK


def add_eval_parser(sub) -> None:
    parser = sub.add_parser(
        "retrieval-eval",
        help="strategy-hit@1/@5 and MRR of vector, full-text and hybrid retrieval against random",
        description="Evaluate retrieval on the project's eval dialogues, or on ESConv's valid conversations "
        "(--esconv PATH: a folder with train.txt/valid.txt, or ESConv.json). Logged to MLflow.",
    )
    parser.add_argument("--esconv", type=Path, help="evaluate on ESConv eval conversations from this path")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    parser.set_defaults(func=_run_eval)


def _run_eval(args) -> int:
    from tasks.retrieval_stage import render_table, retrieval_eval

    project = project_from(args)
    dialogues, report = None, None
    if args.esconv:
        from models.esconv import read_esconv

        dialogues = [d for d in read_esconv(args.esconv) if d["split"] == "eval"]
        report = project.reports / "retrieval_esconv.json"
    result = retrieval_eval(project, dialogues, report)
    print(json.dumps(result["table"], indent=2) if args.json else render_table(result["table"]))
    return EXIT_OK
