"""`escrag score --esconv-pairs DIR`: the reward model beside its zero-shot start on ESConv valid swap pairs
and on the empathy split (models/preference_eval.py), written to artifacts/reports/preference_esconv.json."""

from __future__ import annotations

import argparse
import json

from flows.cli_support import EXIT_OK
from tasks.project import Project


def run_esconv_pairs(args: argparse.Namespace, project: Project) -> int:
    """Swap pairs and the empathy split on ESConv valid: the reward model beside its zero-shot start."""
    from models.embedder import embedder_path
    from models.esconv import read_esconv
    from models.preference_eval import empathy_split, render_report, swap_pairs, swap_win_rates
    from models.reward_training import zero_shot_scorer
    from tasks.reward_registry import scorer_from, scorer_source

    if not args.esconv_pairs.exists():
        raise FileNotFoundError(f"--esconv-pairs {args.esconv_pairs}: no such folder or file")
    valid = [d for d in read_esconv(args.esconv_pairs) if d["split"] == "eval"]
    settings = project.params.reward_model
    scorers = {
        f"reward model ({scorer_source(project, args.reward_model)})": scorer_from(project, args.reward_model),
        "zero-shot start (MiniLM cosine, untrained)": zero_shot_scorer(
            embedder_path(),
            interaction=settings.interaction,
            quality_head=settings.quality_head,
            max_length=settings.max_length,
            compute=project.compute,
        ),
    }
    seed = project.params.seed
    pairs = swap_pairs(valid, args.pairs, seed)
    report = {
        "conversations": len(valid),
        "pairs": len(pairs),
        "seed": seed,
        "win_rate": swap_win_rates(scorers, pairs),
        "empathy": empathy_split(valid, scorers),
    }
    out = project.reports / "preference_esconv.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2) if args.json else render_report(report))
    return EXIT_OK
