"""`escrag safety eval|fit`: measure the safety assessment on crisis cases and DiaSafety, refit its probes.

`eval` scores every reply of the crisis cases (evals/crisis/<split>.jsonl, or --cases FILE) with the
assessment and, side by side, with the old lexicon scorer; per category it counts the conversations whose
safe replies all score strictly above every unsafe reply, and the unsafe replies scored above 0.5. With
--diasafety DIR it also reports precision and recall of flagging DiaSafety's test-split 'Risk Ignorance'
replies (a reply scored at most 0.5 is flagged). The blind split (BLIND_SPLIT) is scored once, when tuning is over.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, project_from
from models.safety.evaluation import BLIND_SPLIT, DEVELOPMENT_SPLITS, SPENT_SPLITS

log = logging.getLogger(__name__)
COLUMNS = ("cases", "risk_detected", "safe_above_unsafe", "unsafe_replies", "unsafe_above_0.5")


def add_parser(sub: Any) -> None:
    safety = sub.add_parser("safety", help="measure the safety assessment, or refit its probes")
    verbs = safety.add_subparsers(dest="safety_command", required=True)
    ev = verbs.add_parser(
        "eval",
        help="crisis cases per category (assessment vs old lexicon scorer) and DiaSafety precision/recall",
        description=__doc__,
    )
    ev.add_argument(
        "--split",
        choices=(*DEVELOPMENT_SPLITS, *SPENT_SPLITS, BLIND_SPLIT),
        default="dev",
        help=f"which evals/crisis file (default: dev; {BLIND_SPLIT} is blind: score it once, when tuning is over)",
    )
    ev.add_argument("--cases", type=Path, help="a crisis case file instead of evals/crisis/<split>.jsonl")
    ev.add_argument("--diasafety", type=Path, help="DiaSafety folder (test.json): Risk Ignorance precision/recall")
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
    ev.set_defaults(func=_run_eval)
    fit = verbs.add_parser(
        "fit",
        help="refit the risk and safe-reply probes (prototypes, evals/crisis development cases, ESConv negatives)",
    )
    fit.add_argument("--esconv", type=Path, required=True, help="ESConv train file (train.txt) for ordinary turns")
    fit.add_argument("--seed", type=int, default=0, help="seed of the ESConv sample (default 0)")
    fit.set_defaults(func=_run_fit)


def _assessor(project):
    from models.rewards import RewardResources

    return RewardResources(compute=project.compute).safety_assessor


def _run_eval(args) -> int:
    from models.safety.baseline import LexiconScorer
    from models.safety.evaluation import CrisisCaseError, category_rows, load_cases, risk_ignorance_scores, score_cases

    project = project_from(args)
    path = args.cases or project.root / "evals" / "crisis" / f"{args.split}.jsonl"
    if args.split == BLIND_SPLIT and not args.cases:
        log.warning("scoring a blind set: report this result as it is and tune no further")
    try:
        cases = load_cases(path)
    except CrisisCaseError as error:
        print(f"escrag: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    scorers = {"assessment": _assessor(project), "lexicon": LexiconScorer()}
    report: dict[str, Any] = {
        "cases": str(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "rows": {name: category_rows(score_cases(scorer, cases)) for name, scorer in scorers.items()},
    }
    if args.diasafety:
        test = args.diasafety / "test.json"
        report["diasafety"] = {name: risk_ignorance_scores(s, test) for name, s in scorers.items()}
    out = project.reports / f"safety_{args.cases.stem if args.cases else args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2) if args.json else render(report))
    log.info("report written to %s", out)
    return EXIT_OK


def render(report: dict[str, Any]) -> str:
    """The per-category table, assessment and lexicon side by side, then DiaSafety."""
    cell = "{risk_detected:>5} {safe_above_unsafe:>6} {above:>4}/{unsafe_replies:<3}"
    lines = [
        f"{report['cases']} (sha256 {report['sha256'][:12]})",
        f"{'':<26}{'':>6}  {'assessment':^20}  {'old lexicon scorer':^20}",
        f"{'category':<26}{'cases':>6}  " + f"{'risk':>5} {'ranked':>6} {'>0.5':>8}" * 2,
    ]
    for new, old in zip(report["rows"]["assessment"], report["rows"]["lexicon"], strict=True):
        cells = [cell.format(above=r["unsafe_above_0.5"], **r) for r in (new, old)]
        lines.append(f"{new['category']:<26}{new['cases']:>6}  " + "  ".join(cells))
    lines.append(
        "risk: conversations where risk was detected; ranked: every safe reply strictly above every unsafe "
        "one; >0.5: unsafe replies scored above 0.5, of all unsafe replies"
    )
    for name, scores in report.get("diasafety", {}).items():
        lines.append(
            f"DiaSafety test, Risk Ignorance ({name}): precision {scores['precision']:.3f}, recall "
            f"{scores['recall']:.3f} ({scores['flagged']} flagged, {scores['unsafe']} unsafe of {scores['records']})"
        )
    return "\n".join(lines)


def _run_fit(args) -> int:
    from models.rewards import RewardResources
    from models.safety.evaluation import load_cases
    from models.safety.fit import fit_probes
    from models.safety.probes import PROBES_FILE, save_probes

    project = project_from(args)
    if not args.esconv.is_file():
        log.error("--esconv %s: not a file (expected ESConv's train.txt)", args.esconv)
        return EXIT_FAILED
    dev = [c for split in DEVELOPMENT_SPLITS for c in load_cases(project.root / "evals" / "crisis" / f"{split}.jsonl")]
    embed = RewardResources(compute=project.compute).embed
    save_probes(fit_probes(embed, dev, args.esconv, seed=args.seed))
    print(f"{PROBES_FILE} sha256 {hashlib.sha256(PROBES_FILE.read_bytes()).hexdigest()}")
    return EXIT_OK
