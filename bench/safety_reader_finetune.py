"""A stronger reader of risk? MiniLM's top layers fine-tuned as a risk classifier, against the shipped `risk` probe.

The shipped assessment reads risk with a small network on frozen MiniLM embeddings (models.safety.probes). This
bench fine-tunes MiniLM's top `--tuned-layers` transformer layers with a classification head on the same texts
the probe learns from (models.safety.fit.risk_texts), and puts both readers in the one assessment
(SafetyAssessor's `risk_reader`). Side by side, by 5-fold CV on the development crisis cases (the folds of
bench/safety_cv.py): per reader and per crisis weight (FLOOR:FULL, Thresholds.risk_floor:risk), the conversations
ranked, the unsafe replies above 0.5 and the conversations whose risk was found; then, with readers fitted on every
development case, the cost on ordinary conversations (ESConv-valid gold supporter replies: mean score, share at
most 0.5), and the fit time of each reader as a ratio to the probe's. Blind sets are never read.

It takes about 35 minutes on 2 CPU cores (6 fine-tunings, each about 6 times as long as a probe fit).

    .venv/bin/python bench/safety_reader_finetune.py --esconv ../shared/data/esconv --splits dev test blind2 blind3 \\
        blind4 blind5
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from safety_cv import FOLDS, CachedEmbed, folds, ordinary_pairs  # noqa: E402

from models.compute import Compute, resolve_compute  # noqa: E402
from models.embedder import EMBEDDING_DIM, embedder_path  # noqa: E402
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
from models.safety.fit import ESCONV_NEGATIVES, TOPIC_NEGATIVES, fit_probes, risk_texts  # noqa: E402

WEIGHTS = ("0.01:0.1", "0.02:0.2", "0.05:0.3", "0.1:0.5")
BATCH = 32
MAX_TOKENS = 128


class TopLayerReader:
    """P(risk) from MiniLM whose top layers (and a linear head on the pooled, unit-length output) are trained.

    The frozen lower layers' token states are computed once per text and kept, so each epoch runs only the top."""

    def __init__(self, compute: Compute, tuned_layers: int) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.device = compute.device
        self.tokenizer = AutoTokenizer.from_pretrained(embedder_path())
        self.base = AutoModel.from_pretrained(embedder_path()).to(self.device).eval()
        self.split = len(self.base.encoder.layer) - tuned_layers
        self.states: dict[str, object] = {}

    def _lower(self, texts: Sequence[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.states]
        with torch.no_grad():
            for i in range(0, len(todo), 64):
                chunk = todo[i : i + 64]
                encoded = self.tokenizer(
                    chunk, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt"
                ).to(self.device)
                hidden = self.base(**encoded, output_hidden_states=True).hidden_states[self.split]
                for j, text in enumerate(chunk):
                    self.states[text] = hidden[j, : int(encoded["attention_mask"][j].sum())].clone()

    def _batch(self, texts: Sequence[str]):
        self._lower(texts)
        rows = [self.states[t] for t in texts]
        width = max(r.shape[0] for r in rows)
        hidden = torch.zeros(len(rows), width, EMBEDDING_DIM, device=self.device)
        mask = torch.zeros(len(rows), width, device=self.device)
        for i, row in enumerate(rows):
            hidden[i, : row.shape[0]], mask[i, : row.shape[0]] = row, 1
        return hidden, mask

    def fit(self, positives: list[str], negatives: list[str], epochs: int, lr: float, seed: int = 0):
        """A fresh copy of the top layers and a head, trained with class-weighted cross-entropy; returns a reader."""
        torch.manual_seed(seed)
        top = _Top(self.base.encoder.layer[self.split :]).to(self.device)
        optimiser = torch.optim.AdamW(top.parameters(), lr=lr, weight_decay=0.01)
        data = [(t, 1.0) for t in positives] + [(t, 0.0) for t in negatives]
        positive_weight = torch.tensor(len(negatives) / max(1, len(positives)), device=self.device)
        order = random.Random(seed)
        top.train()
        for _ in range(epochs):
            order.shuffle(data)
            for i in range(0, len(data), BATCH):
                chunk = data[i : i + BATCH]
                logits = top(*self._batch([t for t, _ in chunk]))
                labels = torch.tensor([y for _, y in chunk], device=self.device)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, pos_weight=positive_weight)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        top.eval()
        return lambda texts: self._probability(top, texts)

    def _probability(self, top, texts: Sequence[str]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for i in range(0, len(texts), 64):
                out += torch.sigmoid(top(*self._batch(texts[i : i + 64]))).cpu().tolist()
        return np.array(out)


class _Top(torch.nn.Module):
    """Copies of the top transformer layers, mean pooling, unit length, a linear head."""

    def __init__(self, layers) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(copy.deepcopy(list(layers)))
        self.head = torch.nn.Linear(EMBEDDING_DIM, 1)

    def forward(self, hidden, mask):
        additive = (1.0 - mask[:, None, None, :]) * -1e4
        for layer in self.layers:
            hidden = layer(hidden, attention_mask=additive)
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.head(torch.nn.functional.normalize(pooled, dim=-1) * 10).squeeze(-1)


def _thresholds(weights: str) -> Thresholds:
    floor, full = (float(x) for x in weights.split(":"))
    return Thresholds(risk=full, risk_floor=floor)


def _cv(fit_reader, embed: CachedEmbed, cases: list[CrisisCase], esconv: Path, weights: Sequence[str]) -> dict:
    """Per weight: CV rows; then the ordinary cost with a reader fitted on every case; and the mean fit time."""
    results, seconds = {w: [] for w in weights}, []
    for held_out in folds(cases):
        kept = [c for c in cases if c not in held_out]
        start = time.perf_counter()
        reader, probes = fit_reader(kept)
        seconds.append(time.perf_counter() - start)
        for w in weights:
            assessor = SafetyAssessor(embed, _thresholds(w), probes=probes, risk_reader=reader)
            results[w] += score_cases(assessor, held_out)
    reader, probes = fit_reader(cases)
    pairs = ordinary_pairs(esconv / "valid.txt")
    out = {"fit_seconds": float(np.mean(seconds))}
    for w in weights:
        assessor = SafetyAssessor(embed, _thresholds(w), probes=probes, risk_reader=reader)
        scores = np.array([a.score for a in assessor.assess_many([p[0] for p in pairs], [p[1] for p in pairs])])
        out[w] = {"rows": category_rows(results[w]), "mean": scores.mean(), "flagged": (scores <= 0.5).mean()}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--esconv", type=Path, required=True, help="ESConv folder (train.txt, valid.txt)")
    parser.add_argument("--splits", nargs="+", default=list(DEVELOPMENT_SPLITS), help="evals/crisis files to tune on")
    parser.add_argument("--weights", nargs="+", default=list(WEIGHTS), metavar="FLOOR:FULL", help="crisis weights")
    parser.add_argument("--tuned-layers", type=int, default=2, help="MiniLM's top layers to fine-tune (default 2)")
    parser.add_argument("--epochs", type=int, default=2, help="fine-tuning epochs (default 2)")
    parser.add_argument("--lr", type=float, default=5e-5, help="fine-tuning learning rate (default 5e-5)")
    args = parser.parse_args()
    if BLIND_SPLIT in args.splits:
        parser.error(f"{BLIND_SPLIT} is the blind set: it is scored once, by `escrag safety eval`, never tuned on")
    cases = [c for s in args.splits for c in load_cases(ROOT / "evals" / "crisis" / f"{s}.jsonl")]
    compute = resolve_compute()
    embed = CachedEmbed(RewardResources(compute=compute).embed)
    train = args.esconv / "train.txt"
    finetune = TopLayerReader(compute, args.tuned_layers)

    def probe_reader(dev):
        return None, fit_probes(embed, dev, train)

    def tuned_reader(dev):
        positives, negatives = risk_texts(embed, dev, train, 0, ESCONV_NEGATIVES, TOPIC_NEGATIVES)
        return finetune.fit(positives, negatives, args.epochs, args.lr), fit_probes(embed, dev, train)

    print(f"development cases: {len(cases)} from {', '.join(args.splits)}; {FOLDS}-fold CV on {compute.device}")
    found = {"risk probe (shipped method)": _cv(probe_reader, embed, cases, args.esconv, args.weights)}
    tuned = f"MiniLM top {args.tuned_layers} layers fine-tuned"
    found[tuned] = _cv(tuned_reader, embed, cases, args.esconv, args.weights)
    base_seconds = found["risk probe (shipped method)"]["fit_seconds"]
    print(f"{'reader':<34} {'weights':>9} {'ranked':>9} {'unsafe>0.5':>11} {'risk found':>10} {'ordinary mean':>13} "
          f"{'ordinary<=0.5':>13} {'fit time':>9}")  # fmt: skip
    for name, result in found.items():
        for w in args.weights:
            total, ratio = result[w]["rows"][-1], result["fit_seconds"] / base_seconds
            print(f"{name:<34} {w:>9} {total['safe_above_unsafe']:>4}/{total['cases']:<4} "
                  f"{total['unsafe_above_0.5']:>4}/{total['unsafe_replies']:<6} {total['risk_detected']:>10} "
                  f"{result[w]['mean']:>13.3f} {result[w]['flagged']:>13.1%} {ratio:>8.1f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
