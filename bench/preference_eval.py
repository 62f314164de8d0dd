"""Preference reward on ESConv: does it rank the gold supporter reply above a swapped one, and does it
tell high-empathy from low-empathy conversations? Side by side with the MiniLM relevance baseline.

Run: .venv/bin/python bench/preference_eval.py [--esconv ../shared/data/esconv] [--pairs 600]
         [--esconv-train-pairs N] [--reward-model NAME=DIR ...] [--keep DIR] [--json OUT.json]
         [--score-input PAIRS.jsonl]

Pairs (models.preference_pairs.position_swap_pairs, seeded): the gold supporter reply of an ESConv valid
context against a supporter reply drawn from another conversation within +-0.05 relative position.
Reward models, each trained here into a temporary folder (or --keep DIR) with the project's trainer:
  starter       starter_data/preferences, params.yaml reward_model settings (what the pipeline trains)
  esconv-train  swap pairs built the same way from ESConv *train* conversations only (never valid),
                all of them unless --esconv-train-pairs N (0 skips it); --esconv-train-epochs (1),
                --esconv-train-batch-size (32), --esconv-train-lr (3e-5), params.yaml max_length
The preference score is the GRPO 'preference' reward itself (sigmoid of the reward model's score of the
reply in its context). Relevance baseline: cosine of MiniLM embeddings of the context and the reply,
with the context as the last 3 turns and, second variant, as the last two seeker turns. "quality head"
(models trained with `quality_head: true`) is each one's context-free part alone (models.pair_encoder):
what it learnt beyond relevance.
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
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from models.dialogue import last_seeker_text, render_turns
from models.esconv import read_esconv
from models.preference_pairs import Slot, auc, position_swap_pairs, reply_slots, win_rate
from models.records import load_records
from models.reward_model import CONTEXT_TURNS, RewardModelScorer
from models.reward_training import train_reward_model

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ESCONV = ROOT.parent / "shared" / "data" / "esconv"
RELEVANCE_TURNS = 3  # the baseline: MiniLM cosine of the last 3 turns and the reply


def train(name: str, pairs: list[dict], out: Path, **settings) -> dict:
    from models.embedder import embedder_path

    start = time.perf_counter()
    metrics = train_reward_model(pairs, encoder_path=embedder_path(), output_dir=out / name, **settings)
    return {**metrics, "train_seconds": time.perf_counter() - start, "dir": str(out / name)}


def preference_scores(model_dir: str, contexts: list[list[dict]], replies: list[str]) -> list[float]:
    """The GRPO 'preference' reward of each reply in its context, called as TRL calls it."""
    from models.embedder import load_embedder
    from models.rewards import RewardResources, build_reward_functions

    resources = RewardResources(load_embedder(), RewardModelScorer(model_dir))
    (reward,), _ = build_reward_functions({"preference": 1.0}, resources)
    return reward(
        completions=[f"</think>{r}" for r in replies],
        context_text=[render_turns(c[-CONTEXT_TURNS:]) for c in contexts],  # as GRPO and `escrag score` pass it
    )


def relevance_scores(contexts: list[str], replies: list[str]) -> list[float]:
    from models.embedder import load_embedder

    embedder = load_embedder()
    a = embedder.encode(contexts, batch_size=64, normalize_embeddings=True)
    b = embedder.encode(replies, batch_size=64, normalize_embeddings=True)
    return [float(x) for x in np.sum(a * b, axis=1)]


def all_scores(models: dict[str, str], contexts: list[list[dict]], replies: list[str]) -> dict[str, list[float]]:
    scores = {f"preference[{n}]": preference_scores(d, contexts, replies) for n, d in models.items()}
    for name, folder in models.items():  # the context-free part: what the model learnt beyond relevance
        scorer = RewardModelScorer(folder)
        if scorer.model.uses_quality_head:
            scores[f"quality head[{name}]"] = scorer.quality(replies)
    recent = [render_turns(c[-RELEVANCE_TURNS:]) for c in contexts]
    scores["relevance (last 3 turns)"] = relevance_scores(recent, replies)
    scores["relevance (last seeker turns)"] = relevance_scores([last_seeker_text(c) for c in contexts], replies)
    return scores


def empathy_split(valid: list[dict], models: dict[str, str]) -> dict:
    empathy = {d["id"]: d["survey"].get("seeker_empathy") for d in valid}
    distribution = Counter("missing" if v is None else int(v) for v in empathy.values())
    slots: list[Slot] = [s for s in reply_slots(valid) if empathy.get(s.conversation_id) is not None]
    scores = all_scores(models, [s.context for s in slots], [s.reply for s in slots])
    result: dict = {"distribution": dict(sorted(distribution.items(), key=str)), "replies": len(slots), "auc": {}}
    for low in (3, 2):
        for method, values in scores.items():
            by_conv: dict[str, list[float]] = defaultdict(list)
            pos, neg = [], []
            for slot, value in zip(slots, values, strict=True):
                level = empathy[slot.conversation_id]
                by_conv[slot.conversation_id].append(value)
                (pos if level >= 4 else neg if level <= low else []).append(value)
            conv_pos = [statistics.fmean(v) for c, v in by_conv.items() if empathy[c] >= 4]
            conv_neg = [statistics.fmean(v) for c, v in by_conv.items() if empathy[c] <= low]
            result["auc"].setdefault(f">=4 vs <={low}", {})[method] = {
                "reply_auc": auc(pos, neg),
                "conversation_auc": auc(conv_pos, conv_neg),
                "n_replies": [len(pos), len(neg)],
                "n_conversations": [len(conv_pos), len(conv_neg)],
            }
    return result


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

    from models.config import load_params

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
            trained["starter"] = train(
                "starter",
                load_records(ROOT / "starter_data", "preferences"),
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
        start = time.perf_counter()
        chosen = all_scores(models, [p["context"] for p in pairs], [p["chosen"] for p in pairs])
        rejected = all_scores(models, [p["context"] for p in pairs], [p["rejected"] for p in pairs])
        wins = {m: win_rate(chosen[m], rejected[m]) for m in chosen}
        pair_seconds = time.perf_counter() - start
        start = time.perf_counter()
        empathy = empathy_split(valid, models)
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
