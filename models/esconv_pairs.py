"""ESConv into escrag's two conversation datasets: dialogues and preference pairs.

Dialogues come from `models.esconv.read_esconv` (supporter strategies per turn, survey scores, the split
of the file a conversation came from: train.txt → train, valid.txt → eval). `clean_dialogue` drops what
escrag's validation would reject: survey scores outside 1–5 (ESConv records an unanswered item as 0) and
optional fields that are null or empty.

Preference pairs, built by `build_pairs`:

* **Candidates.** A supporter turn with a strategy whose previous turn is a seeker turn, and with at
  least `MIN_WORDS` words. The very first turns before any seeker turn are skipped by that rule.
* **Context.** The turns before it, at most `CONTEXT_TURNS` of them; it always ends with the seeker
  turn the reply answers.
* **Chosen.** The gold reply the supporter actually gave.
* **Rejected: an off-context negative.** A supporter reply (with a strategy, at least `MIN_WORDS`
  words, different text) from ANOTHER conversation of the SAME split, at a similar relative position
  in its conversation: the same tenth of the conversation (`POSITION_BINS` bins of turn index /
  (turns - 1)); when that bin has no usable reply the nearest bins are tried. It is fluent,
  in-register ESConv support written at the same stage of a conversation, but for a different seeker,
  so the pair teaches fit to *this* seeker rather than style. The pick is a seeded draw keyed by the
  pair id, so the same input and seed always give the same file, independent of input order. Drawing
  only within the split keeps eval conversations' text out of train pairs.
* **Subsampling.** At most `per_conversation` candidates per conversation (a seeded draw keyed by the
  conversation id), kept in turn order.
* Each pair carries `conversation_id` and `split` of the conversation its context and chosen reply
  come from, so no conversation lands in both splits. There are no scores; `rationale` names the
  negative rule and the conversation and turn the rejected reply was taken from.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from models.esconv import read_esconv

CONTEXT_TURNS = 6
MIN_WORDS = 3
POSITION_BINS = 10
PER_CONVERSATION = 3
SURVEY_RANGE = (1.0, 5.0)

NEGATIVE_RULE = "off-context negative"

Dialogue = dict[str, Any]


def clean_dialogue(dialogue: Dialogue) -> Dialogue:
    """A copy without survey scores outside 1–5 and without null or empty optional fields."""
    lo, hi = SURVEY_RANGE
    out = dict(dialogue)
    out["survey"] = {k: v for k, v in (dialogue.get("survey") or {}).items() if lo <= v <= hi}
    for key in ("emotion", "problem", "survey", "conversation_id"):
        if out.get(key) in (None, "", {}):
            out.pop(key, None)
    return out


def _usable(turn: dict[str, Any]) -> bool:
    return turn["speaker"] == "supporter" and bool(turn.get("strategy")) and len(turn["text"].split()) >= MIN_WORDS


def position_bin(index: int, n_turns: int) -> int:
    """The tenth of the conversation that turn `index` (0-based) of `n_turns` turns falls in."""
    relative = index / max(n_turns - 1, 1)
    return min(int(relative * POSITION_BINS), POSITION_BINS - 1)


def candidate_turns(turns: list[dict[str, Any]]) -> list[int]:
    """Indices of supporter turns with a strategy that answer a seeker turn directly."""
    return [i for i in range(1, len(turns)) if _usable(turns[i]) and turns[i - 1]["speaker"] == "seeker"]


class _NegativePool:
    """Usable supporter replies of one split, by position bin, in a stable order."""

    def __init__(self, dialogues: Iterable[Dialogue]) -> None:
        self.bins: dict[int, list[tuple[str, int, int, str]]] = {b: [] for b in range(POSITION_BINS)}
        for d in sorted(dialogues, key=lambda d: d["id"]):
            turns = d["turns"]
            for i, turn in enumerate(turns):
                if _usable(turn):
                    self.bins[position_bin(i, len(turns))].append((d["id"], i, len(turns), turn["text"]))

    def draw(
        self, rng: random.Random, wanted_bin: int, conversation: str, chosen: str
    ) -> tuple[str, int, int, str] | None:
        """A reply from another conversation, nearest bin first; None when no bin has one."""
        order = sorted(range(POSITION_BINS), key=lambda b: (abs(b - wanted_bin), b))
        for b in order:
            pool = self.bins[b]
            if not pool:
                continue
            start = rng.randrange(len(pool))
            # scan from a random start: deterministic and never stuck on one bad entry
            for k in range(len(pool)):
                entry = pool[(start + k) % len(pool)]
                if entry[0] != conversation and entry[3].strip().lower() != chosen.strip().lower():
                    return entry
        return None


def build_pairs(
    dialogues: list[Dialogue],
    *,
    seed: int = 13,
    per_conversation: int = PER_CONVERSATION,
    context_turns: int = CONTEXT_TURNS,
) -> list[dict[str, Any]]:
    """Preference pairs from dialogues, by the rule in this module's docstring (ordered by dialogue id)."""
    pools = {
        split: _NegativePool(d for d in dialogues if d["split"] == split) for split in {d["split"] for d in dialogues}
    }
    pairs = []
    for d in sorted(dialogues, key=lambda d: d["id"]):
        turns, cid = d["turns"], d["id"]
        candidates = candidate_turns(turns)
        if len(candidates) > per_conversation:
            picked = random.Random(f"{seed}:{cid}").sample(candidates, per_conversation)
            candidates = sorted(picked)
        for i in candidates:
            pair_id = f"{cid}-t{i:03d}"
            chosen = turns[i]["text"]
            wanted = position_bin(i, len(turns))
            found = pools[d["split"]].draw(random.Random(f"{seed}:{pair_id}"), wanted, cid, chosen)
            if found is None:
                continue
            other, other_index, other_turns, rejected = found
            pairs.append(
                {
                    "id": pair_id,
                    "context": [dict(t) for t in turns[max(0, i - context_turns) : i]],
                    "chosen": chosen,
                    "rejected": rejected,
                    "rationale": (
                        f"chosen: the supporter's reply in ESConv ({turns[i]['strategy']}); rejected: "
                        f"{NEGATIVE_RULE}, the supporter reply at turn {other_index} of {other} "
                        f"(position bin {position_bin(other_index, other_turns)}, "
                        f"this reply's bin {wanted}), written for a different seeker"
                    ),
                    "conversation_id": d.get("conversation_id", cid),
                    "split": d["split"],
                }
            )
    return pairs


def convert_esconv(
    path: Path, *, seed: int = 13, per_conversation: int = PER_CONVERSATION
) -> tuple[list[Dialogue], list[dict[str, Any]]]:
    """ESConv (folder of train.txt/valid.txt, or ESConv.json) → (dialogues, preference pairs)."""
    dialogues = [clean_dialogue(d) for d in read_esconv(Path(path))]
    return dialogues, build_pairs(dialogues, seed=seed, per_conversation=per_conversation)
