"""What the preference reward learns beyond relevance, on ESConv's valid conversations.

One home for the figures that `escrag score --esconv-pairs` and `bench/preference_eval.py` both print:
- **swap pairs** (models.preference_pairs.position_swap_pairs, seeded): the gold supporter reply of a
  valid context against a supporter reply from another conversation at a similar relative position;
  the share of pairs where the gold reply scores strictly higher;
- **empathy split**: the AUC of the score at separating the supporter replies of conversations whose
  seeker rated the supporter's empathy high (>= 4) from low (<= 3, and <= 2), per reply and per
  conversation (mean over its replies).

Every scorer is anything with `score(contexts, replies) -> list[float]` (a reward model, its zero-shot
start, a cosine baseline), scored on the same contexts, rendered as GRPO renders them.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from models.dialogue import render_turns
from models.preference_pairs import Slot, auc, position_swap_pairs, reply_slots, win_rate
from models.reward_model import CONTEXT_TURNS

HIGH_EMPATHY = 4  # seeker survey 'empathy' (1-5) at or above this is high
LOW_EMPATHY = (3, 2)  # ... and at or below each of these is low


class Scorer(Protocol):
    def score(self, contexts: Sequence[str], replies: Sequence[str]) -> list[float]: ...


def rendered(contexts: Sequence[list[dict[str, Any]]]) -> list[str]:
    """Contexts as the preference reward sees them in GRPO and `escrag score`."""
    return [render_turns(c[-CONTEXT_TURNS:]) for c in contexts]


def swap_pairs(valid: Sequence[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    return position_swap_pairs(list(valid), seed=seed, max_pairs=n)


def swap_win_rates(scorers: Mapping[str, Scorer], pairs: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per scorer: the share of pairs whose gold reply scores strictly above the swapped one."""
    contexts = rendered([p["context"] for p in pairs])
    rates = {}
    for name, scorer in scorers.items():
        chosen = scorer.score(contexts, [p["chosen"] for p in pairs])
        rejected = scorer.score(contexts, [p["rejected"] for p in pairs])
        rates[name] = win_rate(chosen, rejected)
    return rates


def empathy_split(valid: Sequence[dict[str, Any]], scorers: Mapping[str, Scorer]) -> dict[str, Any]:
    """AUC of each scorer at telling high-empathy conversations' replies from low ones."""
    empathy = {d["id"]: (d.get("survey") or {}).get("seeker_empathy") for d in valid}
    distribution = Counter("missing" if v is None else int(v) for v in empathy.values())
    slots: list[Slot] = [s for s in reply_slots(list(valid)) if empathy.get(s.conversation_id) is not None]
    contexts = rendered([s.context for s in slots])
    scores = {name: scorer.score(contexts, [s.reply for s in slots]) for name, scorer in scorers.items()}
    result: dict[str, Any] = {"distribution": dict(sorted(distribution.items(), key=str)), "replies": len(slots)}
    result["auc"] = {f">={HIGH_EMPATHY} vs <={low}": _aucs(slots, scores, empathy, low) for low in LOW_EMPATHY}
    return result


def _aucs(slots: list[Slot], scores: dict[str, list[float]], empathy: dict, low: int) -> dict[str, dict]:
    rows = {}
    for name, values in scores.items():
        by_conversation: dict[str, list[float]] = defaultdict(list)
        high_replies, low_replies = [], []
        for slot, value in zip(slots, values, strict=True):
            level = empathy[slot.conversation_id]
            by_conversation[slot.conversation_id].append(value)
            if level >= HIGH_EMPATHY:
                high_replies.append(value)
            elif level <= low:
                low_replies.append(value)
        high_conv = [statistics.fmean(v) for c, v in by_conversation.items() if empathy[c] >= HIGH_EMPATHY]
        low_conv = [statistics.fmean(v) for c, v in by_conversation.items() if empathy[c] <= low]
        rows[name] = {
            "reply_auc": auc(high_replies, low_replies),
            "conversation_auc": auc(high_conv, low_conv),
            "n_replies": [len(high_replies), len(low_replies)],
            "n_conversations": [len(high_conv), len(low_conv)],
        }
    return rows


def render_report(report: dict[str, Any]) -> str:
    """The swap-pair table, then the empathy split, as plain text."""
    width = max(len(name) for name in report["win_rate"]) + 2
    lines = [
        f"ESConv valid: {report['conversations']} conversations; {report['pairs']} swap pairs (seed {report['seed']}):"
        " gold reply scored above a reply from another conversation at a similar position",
        f"{'scorer':<{width}} {'gold wins':>9}",
        *(f"{name:<{width}} {rate:>9.3f}" for name, rate in report["win_rate"].items()),
    ]
    empathy = report.get("empathy")
    if empathy:
        lines.append(f"\nempathy split: seeker 'empathy' per conversation {empathy['distribution']}")
        for split, rows in empathy["auc"].items():
            first = next(iter(rows.values()))
            lines.append(
                f"{split}: replies {first['n_replies'][0]}/{first['n_replies'][1]}, "
                f"conversations {first['n_conversations'][0]}/{first['n_conversations'][1]}"
            )
            lines.append(f"{'scorer':<{width}} {'reply AUC':>9} {'conv AUC':>9}")
            lines += [f"{n:<{width}} {r['reply_auc']:>9.3f} {r['conversation_auc']:>9.3f}" for n, r in rows.items()]
    return "\n".join(lines)
