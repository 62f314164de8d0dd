"""Preference reward on ESConv: does it rank the gold supporter reply above a swapped one, and does it
tell high-empathy from low-empathy conversations? Side by side with its zero-shot start.

Run: .venv/bin/python bench/preference_eval.py [--esconv ../shared/data/esconv] [--pairs 600]
         [--esconv-train-pairs N] [--reward-model NAME=DIR ...] [--keep DIR] [--json OUT.json]
         [--score-input PAIRS.jsonl]

Pairs (models.preference_pairs.position_swap_pairs, seeded): the gold supporter reply of an ESConv valid
context against a supporter reply drawn from another conversation within +-0.05 relative position.
Reward models, each trained here into a temporary folder (or --keep DIR) with the project's trainer:
  starter       starter_data preferences plus the rehearsal swap pairs of starter_data dialogues,
                params.yaml reward_model settings (what the pipeline's reward_model stage trains)
  esconv-train  swap pairs built the same way from ESConv *train* conversations only (never valid),
                all of them unless --esconv-train-pairs N (0 skips it); --esconv-train-epochs (1),
                --esconv-train-batch-size (32), --esconv-train-lr (3e-5), params.yaml max_length
Scorers (models.preference_eval, the same code as `escrag score --esconv-pairs`): each model's raw score
(the 'preference' reward is its sigmoid, so the ranking is the same), its quality head alone when it has
one (what it learnt beyond relevance), and the zero-shot start (the untrained pair encoder: MiniLM cosine).
--score-input writes the valid pairs as `escrag score` input (one record per side, ids PAIR:chosen and
PAIR:rejected, guidance []); `--from-score OUT.jsonl` reads `escrag score --json` output back and prints
the gold reply's win rate on `preference`, so the figure can be had from the CLI itself.
Empathy split: ESConv's seeker survey 'empathy' score (1-5) per conversation; AUC of each score at
separating the supporter replies of high-empathy (>= 4) conversations from low ones (<= 3, and <= 2),
per reply and per conversation (mean over its replies). ESConv text is read from --esconv, never copied.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from models.config import load_params
from models.esconv import read_esconv
from models.preference_eval import empathy_split, swap_win_rates
from models.preference_pairs import position_swap_pairs, win_rate
from models.records import load_records
from models.reward_model import RewardModelScorer
from models.reward_training import rehearsal_pairs, train_reward_model

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ESCONV = ROOT.parent / "shared" / "data" / "esconv"


def train(name: str, pairs: list[dict], out: Path, **settings) -> dict:
    from models.embedder import embedder_path

    start = time.perf_counter()
    metrics = train_reward_model(pairs, encoder_path=embedder_path(), output_dir=out / name, **settings)
    return {**metrics, "train_seconds": time.perf_counter() - start, "dir": str(out / name)}


class QualityHead:
    """A reward model's context-free part alone (models.pair_encoder): what it learnt beyond relevance."""

    def __init__(self, scorer: RewardModelScorer) -> None:
        self._scorer = scorer

    def score(self, contexts: list[str], replies: list[str]) -> list[float]:
        return self._scorer.quality(replies)


def scorers_for(models: dict[str, str]) -> dict:
    """The same scorers `escrag score --esconv-pairs` uses, per trained model, plus quality heads."""
    from models.embedder import embedder_path
    from models.reward_training import zero_shot_scorer

    settings = load_params(ROOT / "params.yaml").reward_model
    found: dict = {f"preference[{name}]": RewardModelScorer(folder) for name, folder in models.items()}
    found |= {f"quality head[{n}]": QualityHead(s) for n, s in list(found.items()) if s.model.uses_quality_head}
    found["zero-shot start (MiniLM cosine, untrained)"] = zero_shot_scorer(
        embedder_path(),
        interaction=settings.interaction,
        quality_head=settings.quality_head,
        max_length=settings.max_length,
    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--esconv", type=Path, default=DEFAULT_ESCONV, help="folder with train.txt and valid.txt")
    parser.add_argument("--pairs", type=int, default=600, help="valid pairs to score (default 600)")
    parser.add_argument("--esconv-train-pairs", type=int, help="ESConv train pairs (default all; 0: skip)")
    parser.add_argument("--esconv-train-epochs", type=float, default=1.0, help="epochs for esconv-train")
    parser.add_argument("--esconv-train-batch-size", type=int, default=32, help="batch size for esconv-train")
    parser.add_argument("--esconv-train-lr", type=float, default=3e-5, help="learning rate for esconv-train")
    parser.add_argument("--reward-model", action="append", default=[], metavar="NAME=DIR", help="also evaluate")
    parser.add_argument("--skip-starter", action="store_true", help="do not train the starter reward model")
    parser.add_argument("--keep", type=Path, help="write the trained reward models here (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--score-input", type=Path, help="write the valid pairs as `escrag score` input and stop")
    parser.add_argument("--from-score", type=Path, help="win rate of `escrag score --json` output, then stop")
    args = parser.parse_args()
    if args.from_score:
        print(f"gold reply wins on preference: {score_output_win_rate(args.from_score):.4f}")
        return

    dialogues = list(read_esconv(args.esconv))
    valid = [d for d in dialogues if d["split"] == "eval"]
    train_dialogues = [d for d in dialogues if d["split"] == "train"]
    pairs = position_swap_pairs(valid, seed=args.seed, max_pairs=args.pairs)
    if args.score_input:
        write_score_input(pairs, args.score_input)
        return
    settings = load_params(ROOT / "params.yaml").reward_model
    with tempfile.TemporaryDirectory(prefix="preference-eval-") as tmp:
        out = args.keep or Path(tmp)
        trained: dict[str, dict] = {}
        if not args.skip_starter:
            preferences = load_records(ROOT / "starter_data", "preferences")
            dialogues = load_records(ROOT / "starter_data", "dialogues")
            rehearsal = rehearsal_pairs(dialogues, preferences, settings.rehearsal_per_dialogue, args.seed)
            trained["starter"] = train(
                "starter",
                preferences + rehearsal,
                out,
                epochs=settings.epochs,
                learning_rate=settings.learning_rate,
                batch_size=settings.batch_size,
                eval_fraction=settings.eval_fraction,
                seed=args.seed,
                max_length=settings.max_length,
                in_batch_weight=settings.in_batch_weight,
                interaction=settings.interaction,
                quality_head=settings.quality_head,
            )
        if args.esconv_train_pairs != 0:
            train_pairs = position_swap_pairs(train_dialogues, seed=args.seed, max_pairs=args.esconv_train_pairs)
            trained["esconv-train"] = train(
                "esconv-train",
                train_pairs,
                out,
                epochs=args.esconv_train_epochs,
                learning_rate=args.esconv_train_lr,
                batch_size=args.esconv_train_batch_size,
                eval_fraction=0.1,
                seed=args.seed,
                max_length=settings.max_length,
                in_batch_weight=settings.in_batch_weight,
                interaction=settings.interaction,
                quality_head=settings.quality_head,
            )
        models = {name: info["dir"] for name, info in trained.items()}
        models.update(dict(spec.split("=", 1) for spec in args.reward_model))
        scorers = scorers_for(models)
        start = time.perf_counter()
        wins = swap_win_rates(scorers, pairs)
        pair_seconds = time.perf_counter() - start
        start = time.perf_counter()
        empathy = empathy_split(valid, scorers)
        empathy_seconds = time.perf_counter() - start
    report(valid, pairs, trained, wins, empathy, pair_seconds, empathy_seconds)
    if args.json:
        payload = {"pairs": len(pairs), "trained": trained, "win_rate": wins, "empathy": empathy}
        args.json.write_text(json.dumps(payload, indent=2, default=str))


def write_score_input(pairs: list[dict], path: Path) -> None:
    """Each pair as two `escrag score` records (gold, then swapped), with no guidance to retrieve."""
    with path.open("w", encoding="utf-8") as out:
        for pair in pairs:
            for side in ("chosen", "rejected"):
                record = {"id": f"{pair['id']}:{side}", "context": pair["context"], "response": pair[side]}
                out.write(json.dumps({**record, "guidance": []}, ensure_ascii=False) + "\n")


def score_output_win_rate(path: Path) -> float:
    """Share of pairs whose chosen record has the higher `preference` in `escrag score --json` output."""
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        pair, side = row["id"].rsplit(":", 1)
        scores[pair][side] = row["scores"]["preference"]
    complete = [s for s in scores.values() if {"chosen", "rejected"} <= set(s)]
    return win_rate([s["chosen"] for s in complete], [s["rejected"] for s in complete])


def report(valid, pairs, trained, wins, empathy, pair_seconds, empathy_seconds) -> None:
    print(f"ESConv valid: {len(valid)} conversations; {len(pairs)} pairs (gold vs a reply from another")
    print("conversation within +-0.05 relative position, seeded)\n")
    print(f"{'reward model':<14} {'train pairs':>11} {'held-out':>8} {'held-out acc':>12} {'train s':>8}")
    for name, info in trained.items():
        print(
            f"{name:<14} {info['n_train']:>11} {info['n_heldout']:>8} "
            f"{info['heldout_pairwise_accuracy']:>12.3f} {info['train_seconds']:>8.1f}"
        )
    print(f"\n{'method':<32} {'gold wins':>9}   (scoring {pair_seconds:.0f} s)")
    for method, rate in wins.items():
        print(f"{method:<32} {rate:>9.3f}")
    print(f"\nempathy split: seeker 'empathy' per conversation {empathy['distribution']}")
    print(f"{empathy['replies']} supporter replies scored ({empathy_seconds:.0f} s)")
    for split, rows in empathy["auc"].items():
        first = next(iter(rows.values()))
        print(
            f"\n{split}: replies {first['n_replies'][0]}/{first['n_replies'][1]}, "
            f"conversations {first['n_conversations'][0]}/{first['n_conversations'][1]}"
        )
        print(f"{'method':<32} {'reply AUC':>9} {'conv AUC':>9}")
        for method, row in rows.items():
            print(f"{method:<32} {row['reply_auc']:>9.3f} {row['conversation_auc']:>9.3f}")


if __name__ == "__main__":
    main()
