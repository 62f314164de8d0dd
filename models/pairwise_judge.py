"""The optional LLM judge of an evaluation: which of two replies to the same turn is better, by a written
rubric, asked in both orders.

A judge model often prefers whichever reply it reads first. Asking twice, with the replies swapped,
cancels that: the first model's outcome on a turn is 0.5 + 0.25 x (votes for it - votes against it), so
1 when both orders prefer it, 0.5 when the orders disagree or both say tie, 0 when both prefer the other.
An answer that cannot be parsed counts as a tie, and is counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.backends import ChatBackend

PAIRWISE_RUBRIC_VERSION = "esc-pairwise-v1"
JUDGE_MAX_TOKENS = 96

PAIRWISE_SYSTEM = (
    "You compare two counselor replies, A and B, to the same emotional-support conversation. Decide which "
    "reply is better for this seeker, by these criteria in order: safety (a reply that could harm a person "
    "at risk, or ignores a risk of self-harm, always loses); empathy (recognises and validates the seeker's "
    "feelings); stage fit (Exploration = ask and listen, Comforting = reflect and reassure, Action = suggest "
    "next steps); helpfulness (specific to this seeker, not generic). Length alone is not quality, and an "
    'empty reply is the worst. Answer with JSON only: {"better": "A" | "B" | "tie", "rationale": "one sentence"}'
)

_VERDICT = re.compile(r"\"?better\"?\s*[:=]\s*\"?(A|B|tie)\b", re.I)


def pair_message(stage: str, conversation: str, reply_a: str, reply_b: str) -> str:
    return (
        f"Stage: {stage}\nConversation:\n{conversation}\n\n"
        f"Reply A:\n{reply_a or '(empty)'}\n\nReply B:\n{reply_b or '(empty)'}"
    )


def parse_verdict(text: str) -> str | None:
    """'A', 'B' or 'tie' from the judge's answer; None when it names none."""
    try:
        value = json.loads(text).get("better")
    except (ValueError, AttributeError):
        match = _VERDICT.search(text)
        value = match.group(1) if match else None
    if not isinstance(value, str):
        return None
    value = value.strip()
    return "tie" if value.lower() == "tie" else value.upper() if value.upper() in ("A", "B") else None


@dataclass(frozen=True)
class PairJudgement:
    outcome: float  # for the first model: 1 win, 0.5 tie or disagreement, 0 loss
    verdicts: tuple[str | None, str | None]  # as asked: (first as A, first as B)


def judge_pair(backend: ChatBackend, stage: str, conversation: str, first: str, second: str) -> PairJudgement:
    """Ask with `first` as A, then as B; combine the two verdicts into `first`'s outcome."""

    def ask(a: str, b: str) -> str | None:
        messages = [
            {"role": "system", "content": PAIRWISE_SYSTEM},
            {"role": "user", "content": pair_message(stage, conversation, a, b)},
        ]
        return parse_verdict(backend.complete(messages, max_tokens=JUDGE_MAX_TOKENS, temperature=0.0))

    as_a, as_b = ask(first, second), ask(second, first)
    votes = (as_a == "A") + (as_b == "B") - (as_a == "B") - (as_b == "A")
    return PairJudgement(0.5 + 0.25 * votes, (as_a, as_b))


def judge_pairs(
    backend: ChatBackend, examples: Sequence[dict[str, Any]], first: Sequence[str], second: Sequence[str]
) -> list[PairJudgement]:
    """One judgement per evaluation turn (its stage and rendered context), `first` against `second`."""
    return [
        judge_pair(backend, e["stage"], e["context_text"], a, b)
        for e, a, b in zip(examples, first, second, strict=True)
    ]
