"""Fitting the safety probes: described categories + evals/crisis development cases + ESConv-train negatives."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from models.safety import prototypes, rules
from models.safety.evaluation import CrisisCase
from models.safety.probes import Probe, fit_mlp_probe, fit_probe
from models.safety.semantic import Embed, sentences

ESCONV_NEGATIVES = 3000  # ordinary seeker turns: what the risk probe must not flag
# Per development seeker sentence, the ordinary ESConv-train sentences nearest to it in meaning: they share its
# topic (children, sleep, letters) without the risk, so the probe cannot learn the topic as the risk.
TOPIC_NEGATIVES = 3
MIN_TURN_WORDS = 4


def esconv_seeker_turns(path: Path, n: int | None, seed: int) -> list[str]:
    """`n` seeker turns (at least MIN_TURN_WORDS words) sampled from an ESConv file; all of them when n is None."""
    turns = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        dialog = json.loads(line).get("dialog", [])
        turns += [t["text"] for t in dialog if t.get("speaker") == "usr" and len(t["text"].split()) >= MIN_TURN_WORDS]
    random.Random(seed).shuffle(turns)
    return turns if n is None else turns[:n]


def topic_negatives(embed: Embed, texts: list[str], esconv_train: Path, k: int) -> list[str]:
    """The `k` ESConv-train seeker sentences nearest to each of `texts`, leaving out any with a listed risk phrase
    (some ESConv seekers do speak of suicide: those are not negatives)."""
    if k <= 0 or not texts:
        return []
    turns = esconv_seeker_turns(esconv_train, None, seed=0)
    pool = [s for s in dict.fromkeys(s for t in sorted(turns) for s in sentences(t)) if not rules.risk_cues(s)]
    similarity = np.asarray(embed(texts)) @ np.asarray(embed(pool)).T
    nearest = np.argsort(-similarity, axis=1, kind="stable")[:, :k]
    return [pool[i] for i in sorted(set(nearest.ravel().tolist()))]


def risk_texts(
    embed: Embed, dev: list[CrisisCase], esconv_train: Path, seed: int, negatives: int, topic: int
) -> tuple[list[str], list[str]]:
    """What a reader of risk learns from: (texts showing risk, ordinary texts)."""
    positives = [t for group in prototypes.RISK.values() for t in group] + [c.seeker for c in dev]
    ordinary_turns = esconv_seeker_turns(esconv_train, negatives, seed)
    # the risk level is read per sentence too (assess.py), so ordinary sentences are negatives as well
    ordinary_sentences = list(dict.fromkeys(s for turn in ordinary_turns for s in sentences(turn)))
    seeker_parts = list(dict.fromkeys(p for c in dev for p in (c.seeker, *sentences(c.seeker))))
    ordinary = list(prototypes.ORDINARY) * prototypes.ORDINARY_WEIGHT + ordinary_turns + ordinary_sentences
    return positives, ordinary + topic_negatives(embed, seeker_parts, esconv_train, topic)


def fit_probes(
    embed: Embed,
    dev: list[CrisisCase],
    esconv_train: Path,
    seed: int = 0,
    negatives: int = ESCONV_NEGATIVES,
    topic: int = TOPIC_NEGATIVES,
) -> dict[str, Probe]:
    """The `risk` and `safe_reply` probes from the development cases `dev`; never sees a blind set."""
    risk_pos, risk_neg = risk_texts(embed, dev, esconv_train, seed, negatives, topic)
    safe = [t for group in prototypes.SAFE_REPLY.values() for t in group] + [r for c in dev for r in c.safe]
    # every sentence of a safe reply is safe on its own (a reply is judged by its least safe sentence too,
    # assess.py); sentences of unsafe replies are not labelled, since most of them are harmless alone
    safe += list(dict.fromkeys(s for reply in safe for s in sentences(reply) if s != reply))
    unsafe = [t for group in prototypes.UNSAFE_REPLY.values() for t in group]
    unsafe += [text for c in dev for _, text in c.unsafe]
    return {
        "risk": fit_mlp_probe(
            np.asarray(embed(risk_pos + risk_neg)), [1] * len(risk_pos) + [0] * len(risk_neg), seed=seed
        ),
        "safe_reply": fit_probe(np.asarray(embed(safe + unsafe)), [1] * len(safe) + [0] * len(unsafe)),
    }
