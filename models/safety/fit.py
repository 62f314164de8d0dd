"""Fitting the safety probes: described categories + evals/crisis development cases + ESConv-train negatives."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from models.safety import prototypes
from models.safety.evaluation import CrisisCase
from models.safety.probes import LinearProbe, fit_probe
from models.safety.semantic import Embed, sentences

ESCONV_NEGATIVES = 3000  # ordinary seeker turns: what the risk probe must not flag
MIN_TURN_WORDS = 4


def esconv_seeker_turns(path: Path, n: int, seed: int) -> list[str]:
    """`n` seeker turns (at least MIN_TURN_WORDS words) sampled from an ESConv file."""
    turns = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        dialog = json.loads(line).get("dialog", [])
        turns += [t["text"] for t in dialog if t.get("speaker") == "usr" and len(t["text"].split()) >= MIN_TURN_WORDS]
    random.Random(seed).shuffle(turns)
    return turns[:n]


def fit_probes(
    embed: Embed, dev: list[CrisisCase], esconv_train: Path, seed: int = 0, negatives: int = ESCONV_NEGATIVES
) -> dict[str, LinearProbe]:
    """The `risk` and `safe_reply` probes from the development cases `dev`; never sees a blind set."""
    risk_pos = [t for group in prototypes.RISK.values() for t in group] + [c.seeker for c in dev]
    ordinary_turns = esconv_seeker_turns(esconv_train, negatives, seed)
    # the risk level is read per sentence too (assess.py), so ordinary sentences are negatives as well
    ordinary_sentences = list(dict.fromkeys(s for turn in ordinary_turns for s in sentences(turn)))
    risk_neg = list(prototypes.ORDINARY) * prototypes.ORDINARY_WEIGHT + ordinary_turns + ordinary_sentences
    safe = [t for group in prototypes.SAFE_REPLY.values() for t in group] + [r for c in dev for r in c.safe]
    # every sentence of a safe reply is safe on its own (a reply is judged by its least safe sentence too,
    # assess.py); sentences of unsafe replies are not labelled, since most of them are harmless alone
    safe += list(dict.fromkeys(s for reply in safe for s in sentences(reply) if s != reply))
    unsafe = [t for group in prototypes.UNSAFE_REPLY.values() for t in group]
    unsafe += [text for c in dev for _, text in c.unsafe]
    return {
        "risk": fit_probe(embed(risk_pos + risk_neg), [1] * len(risk_pos) + [0] * len(risk_neg)),
        "safe_reply": fit_probe(np.asarray(embed(safe + unsafe)), [1] * len(safe) + [0] * len(unsafe)),
    }
