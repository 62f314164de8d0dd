"""Fitting the safety probes: described categories + evals/crisis dev half + ESConv-train negatives."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from models.safety import prototypes
from models.safety.evaluation import CrisisCase
from models.safety.probes import LinearProbe, fit_probe
from models.safety.semantic import Embed

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


def fit_probes(embed: Embed, dev: list[CrisisCase], esconv_train: Path, seed: int = 0) -> dict[str, LinearProbe]:
    """The `risk` and `safe_reply` probes; never sees the test half."""
    risk_pos = [t for group in prototypes.RISK.values() for t in group] + [c.seeker for c in dev]
    risk_neg = list(prototypes.ORDINARY) * prototypes.ORDINARY_WEIGHT + esconv_seeker_turns(
        esconv_train, ESCONV_NEGATIVES, seed
    )
    safe = [t for group in prototypes.SAFE_REPLY.values() for t in group] + [r for c in dev for r in c.safe]
    unsafe = [t for group in prototypes.UNSAFE_REPLY.values() for t in group]
    unsafe += [text for c in dev for _, text in c.unsafe]
    return {
        "risk": fit_probe(embed(risk_pos + risk_neg), [1] * len(risk_pos) + [0] * len(risk_neg)),
        "safe_reply": fit_probe(np.asarray(embed(safe + unsafe)), [1] * len(safe) + [0] * len(unsafe)),
    }
