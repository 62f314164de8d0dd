"""Cross-validation of the safety assessment on the development crisis cases, the way its settings are chosen.

Each setting is scored by 5-fold cross-validation on the development files of evals/crisis (folds
stratified by category, cases ordered by the sha256 of their id): every case is scored by probes fitted
without it. Then its cost on ordinary conversations, with probes fitted on every development case: the
gold supporter replies of the first 150 ESConv-valid conversations (mean score, share at most 0.5), and, per
candidate serving threshold, the share of crisis conversations the layer covers against the share of those
gold replies it would replace. Blind sets are never read.

    .venv/bin/python bench/safety_cv.py --esconv ../shared/data/esconv --weights 0.01:0.1 0.02:0.1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.esconv import SPEAKER  # noqa: E402
from models.rewards import RewardResources  # noqa: E402
from models.safety import SafetyAssessor  # noqa: E402
from models.safety.assess import Thresholds  # noqa: E402
from models.safety.evaluation import (  # noqa: E402
    BLIND_SPLIT,
    DEVELOPMENT_SPLITS,
    CrisisCase,
    category_rows,
    load_cases,
    score_cases,
)
from models.safety.fit import ESCONV_NEGATIVES, TOPIC_NEGATIVES, fit_probes  # noqa: E402
from models.safety.layer import KEPT, layer_action, seeker_words  # noqa: E402

FOLDS = 5
ORDINARY_DIALOGUES = 150
LAYER_THRESHOLDS = (0.1, 0.2, 0.3, 0.5, 0.7)  # candidate serving operating points (Thresholds.serving_risk)


class CachedEmbed:
    """The embedder with a memory: every text is encoded once across folds and settings."""

    def __init__(self, embed) -> None:
        self.embed, self.vectors = embed, {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.embed(missing), strict=True))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)


def folds(cases: list[CrisisCase]) -> list[list[CrisisCase]]:
    """FOLDS groups, each category spread evenly, in the order of the sha256 of the case ids."""
    out: list[list[CrisisCase]] = [[] for _ in range(FOLDS)]
    for category in sorted({c.category for c in cases}):
        members = [c for c in cases if c.category == category]
        ranked = sorted(members, key=lambda c: hashlib.sha256(c.id.encode()).hexdigest())
        for i, case in enumerate(ranked):
            out[i % FOLDS].append(case)
    return out


def ordinary_pairs(valid: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in valid.read_text(encoding="utf-8").splitlines()[:ORDINARY_DIALOGUES]:
        dialog = json.loads(line)["dialog"]
        pairs += [(dialog[i]["text"], dialog[i - 1]["text"]) for i in range(1, len(dialog))
                  if dialog[i]["speaker"] == "sys" and dialog[i - 1]["speaker"] == "usr"]  # fmt: skip
    return pairs


def serving_pairs(valid: Path) -> list[tuple[str, str]]:
    """(gold supporter reply, every seeker turn so far, as models.safety.layer.seeker_words joins them)."""
    pairs = []
    for line in valid.read_text(encoding="utf-8").splitlines()[:ORDINARY_DIALOGUES]:
        turns = [{"speaker": SPEAKER[t["speaker"]], "text": t["text"]} for t in json.loads(line)["dialog"]]
        for i, turn in enumerate(turns):
            if i and turn["speaker"] == "supporter" and turns[i - 1]["speaker"] == "seeker":
                pairs.append((turn["text"], seeker_words(turns[:i])))
    return pairs


def serving_rows(assessor: SafetyAssessor, crisis_levels: np.ndarray, valid: Path) -> list[tuple[float, float, float]]:
    """Per layer threshold: the share of development crisis conversations at or above it (CV risk levels), and
    the share of ESConv-valid gold replies the layer would replace (models.safety.layer.layer_action)."""
    pairs = serving_pairs(valid)
    found = assessor.assess_many([p[0] for p in pairs], [p[1] for p in pairs])
    return [
        (t, float((crisis_levels >= t).mean()), float(np.mean([layer_action(a, t) != KEPT for a in found])))
        for t in LAYER_THRESHOLDS
    ]


def measure(
    embed: CachedEmbed, cases: list[CrisisCase], esconv: Path, negatives: int, topic: int, limits: Thresholds
) -> dict:
    results, crisis_levels = [], []
    for held_out in folds(cases):
        kept = [c for c in cases if c not in held_out]
        probes = fit_probes(embed, kept, esconv / "train.txt", negatives=negatives, topic=topic)
        fold_assessor = SafetyAssessor(embed, limits, probes=probes)
        results += score_cases(fold_assessor, held_out)
        crisis_levels += fold_assessor.risk_levels([c.seeker for c in held_out])
    rows = category_rows(results)
    probes = fit_probes(embed, cases, esconv / "train.txt", negatives=negatives, topic=topic)
    assessor = SafetyAssessor(embed, limits, probes=probes)
    pairs = ordinary_pairs(esconv / "valid.txt")
    scores = np.array([a.score for a in assessor.assess_many([p[0] for p in pairs], [p[1] for p in pairs])])
    return {
        "rows": rows,
        "ordinary_mean": float(scores.mean()),
        "ordinary_flagged": float((scores <= 0.5).mean()),
        "serving": serving_rows(assessor, np.array(crisis_levels), esconv / "valid.txt"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--esconv", type=Path, required=True, help="ESConv folder (train.txt, valid.txt)")
    parser.add_argument(
        "--negatives",
        type=int,
        nargs="+",
        default=[ESCONV_NEGATIVES],
        help=f"ordinary ESConv-train seeker turns as risk negatives (default {ESCONV_NEGATIVES})",
    )
    parser.add_argument(
        "--topic",
        type=int,
        nargs="+",
        default=[TOPIC_NEGATIVES],
        help=f"ordinary ESConv-train sentences nearest each development seeker sentence (default {TOPIC_NEGATIVES})",
    )
    parser.add_argument(
        "--weights",
        nargs="+",
        default=[f"{Thresholds.risk_floor}:{Thresholds.risk}"],
        metavar="FLOOR:FULL",
        help="P(risk) where the crisis judgement starts to count and where it counts in full (default: shipped)",
    )
    parser.add_argument("--splits", nargs="+", default=list(DEVELOPMENT_SPLITS), help="evals/crisis files to tune on")
    args = parser.parse_args()
    if blind := {BLIND_SPLIT} & set(args.splits):
        parser.error(f"{blind.pop()} is the blind set: it is scored once, by `escrag safety eval`, never tuned on")
    cases = [c for s in args.splits for c in load_cases(ROOT / "evals" / "crisis" / f"{s}.jsonl")]
    embed = CachedEmbed(RewardResources().embed)
    print(f"development cases: {len(cases)} from {', '.join(args.splits)}; {FOLDS}-fold CV")
    print(f"{'weights':>9}  {'negatives':>9}  {'topic':>5}  {'ranked':>9}  {'unsafe>0.5':>10}  {'risk found':>10}  "
          f"{'ordinary mean':>13}  {'ordinary<=0.5':>13}")  # fmt: skip
    settings = [(w, n, k) for w in args.weights for n in args.negatives for k in args.topic]
    for weights, negatives, topic in settings:
        floor, full = (float(x) for x in weights.split(":"))
        found = measure(embed, cases, args.esconv, negatives, topic, Thresholds(risk=full, risk_floor=floor))
        total = found["rows"][-1]
        print(f"{weights:>9}  {negatives:>9}  {topic:>5}  {total['safe_above_unsafe']:>4}/{total['cases']:<4}  "
              f"{total['unsafe_above_0.5']:>4}/{total['unsafe_replies']:<5}  {total['risk_detected']:>10}  "
              f"{found['ordinary_mean']:>13.3f}  {found['ordinary_flagged']:>13.1%}")  # fmt: skip
        for row in found["rows"][:-1]:
            above = f"{row['unsafe_above_0.5']:>2}/{row['unsafe_replies']:<3}"
            print(f"{'':>27}  {row['category']:<26} ranked {row['safe_above_unsafe']:>2}/{row['cases']:<2} "
                  f"unsafe>0.5 {above} risk {row['risk_detected']}")  # fmt: skip
        for threshold, covered, replaced in found["serving"]:
            print(f"{'':>27}  serving layer from P(risk) {threshold:.1f}: covers {covered:.1%} of crisis "
                  f"conversations, replaces {replaced:.1%} of ESConv gold replies")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
