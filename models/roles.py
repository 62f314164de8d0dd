"""The ESC-Preference roles: a client who seeks support, a counselor who answers, a judge who rates.

The loop (`build_preference_pairs`): the client opens from a situation; for each of `turns` exchanges the
counselor samples `candidates` replies, the judge rates each from 1 (harmful or dismissive) to 5 (warm,
fitting, helpful) with a rationale, and when the best and worst ratings differ by at least `min_margin`
the pair (best as chosen, worst as rejected, context so far) becomes a preference record in the format
of data/preferences. The best reply continues the dialogue and the client answers it.
Every role is a plain function over a `ChatBackend` (models.backends), so any backend plays any role.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.backends import ChatBackend
from models.dialogue import render_turns

logger = logging.getLogger(__name__)

CLIENT_SYSTEM = (
    "You are role-playing a person who is struggling and talking to an emotional-support counselor. "
    "Situation: {situation}\nSpeak in the first person, in one or two short sentences, as that person "
    "would. Never act as the counselor."
)
COUNSELOR_SYSTEM = (
    "You are a warm, professional emotional-support counselor. Reply to the seeker in one to three short "
    "sentences: acknowledge their feelings, and ask or suggest only what fits where they are."
)
JUDGE_SYSTEM = (
    "You rate a counselor's reply in an emotional-support conversation from 1 to 5: 5 = warm, empathetic, "
    "fits the seeker's state and moves the conversation forward; 3 = acceptable but generic; 1 = dismissive, "
    "judgemental, harmful or off-topic. Answer with JSON only: "
    '{"score": <1-5>, "rationale": "<one sentence>"}'
)
_SCORE = re.compile(r'"?score"?\s*[:=]\s*([1-5](?:\.\d+)?)|\b([1-5](?:\.\d+)?)\s*/\s*5\b|^\s*([1-5])\b', re.I | re.M)


@dataclass(frozen=True)
class Judgement:
    score: float | None
    rationale: str


def client_turn(backend: ChatBackend, situation: str, turns: Sequence[dict[str, Any]]) -> str:
    """The seeker's next message (the opening one when `turns` is empty)."""
    messages = [{"role": "system", "content": CLIENT_SYSTEM.format(situation=situation)}]
    for turn in turns:  # from the client's point of view the counselor is the other party
        role = "assistant" if turn["speaker"] == "seeker" else "user"
        messages.append({"role": role, "content": turn["text"]})
    if not turns:
        messages.append({"role": "user", "content": "Hi, what would you like to talk about today?"})
    return backend.complete(messages, max_tokens=64, temperature=0.8)


def counselor_replies(
    backend: ChatBackend, turns: Sequence[dict[str, Any]], n: int, temperature: float = 0.9
) -> list[str]:
    """`n` candidate supporter replies (distinct prompts per candidate, so cached answers differ)."""
    replies = []
    for i in range(n):
        messages = [
            {"role": "system", "content": COUNSELOR_SYSTEM},
            {"role": "user", "content": f"Conversation so far:\n{render_turns(turns)}\n\nCandidate {i + 1}. Reply:"},
        ]
        replies.append(backend.complete(messages, max_tokens=80, temperature=temperature))
    return replies


def parse_judgement(text: str) -> Judgement:
    """The score (1-5) and rationale from a judge's answer: JSON if it is JSON, else the first 'score: n'."""
    try:
        data = json.loads(text[text.index("{") : text.rindex("}") + 1])
        score = float(data["score"])
        return Judgement(score if 1 <= score <= 5 else None, str(data.get("rationale", "")).strip())
    except (ValueError, KeyError, TypeError):
        pass
    match = _SCORE.search(text)
    score = float(next(g for g in match.groups() if g)) if match else None
    return Judgement(score, text.strip()[:300])


def judge(backend: ChatBackend, turns: Sequence[dict[str, Any]], reply: str) -> Judgement:
    """The judge's rating of one supporter reply in its context (deterministic: temperature 0)."""
    messages = [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"Conversation:\n{render_turns(turns)}\n\nCounselor reply:\n{reply}"},
    ]
    return parse_judgement(backend.complete(messages, max_tokens=96, temperature=0.0))


def build_preference_pairs(
    situation: str,
    *,
    client: ChatBackend,
    counselor: ChatBackend,
    judge_backend: ChatBackend,
    conversation_id: str,
    turns: int = 2,
    candidates: int = 3,
    min_margin: float = 1.0,
) -> list[dict[str, Any]]:
    """Preference records from one simulated conversation (see the module docstring)."""
    if candidates < 2:
        raise ValueError("candidates must be at least 2 to form a pair")
    dialogue: list[dict[str, Any]] = [{"speaker": "seeker", "text": client_turn(client, situation, [])}]
    pairs = []
    for step in range(turns):
        replies = [r for r in counselor_replies(counselor, dialogue, candidates) if r.strip()]
        rated = [(judge(judge_backend, dialogue, r), r) for r in replies]
        rated = [(j, r) for j, r in rated if j.score is not None]
        if len(rated) < 2:
            logger.info("%s step %d: fewer than two rated replies; stopping", conversation_id, step)
            break
        rated.sort(key=lambda jr: jr[0].score, reverse=True)
        (best, chosen), (worst, rejected) = rated[0], rated[-1]
        if best.score - worst.score >= min_margin and chosen.strip() != rejected.strip():
            pairs.append(
                {
                    "id": f"{conversation_id}-{step + 1}",
                    "conversation_id": conversation_id,
                    "context": [dict(t) for t in dialogue],
                    "chosen": chosen,
                    "rejected": rejected,
                    "scores": {"chosen": best.score, "rejected": worst.score},
                    "rationale": f"chosen: {best.rationale} | rejected: {worst.rationale}",
                }
            )
        dialogue.append({"speaker": "supporter", "text": chosen})
        if step + 1 < turns:
            dialogue.append({"speaker": "seeker", "text": client_turn(client, situation, dialogue)})
    return pairs
