"""The ESC-Preference roles: a client who seeks support, a counselor who answers, a judge who rates.

The loop (`build_preference_pairs`): the client opens from a situation (and a persona, where given); for
each of `turns` exchanges the counselor writes `candidates` replies that differ in their target ESConv
strategy and in whether they see retrieved guidance (`candidate_plans`), the judge scores each on the
rubric of models.rubric (`RUBRIC_VERSION`) with a rationale, and when the best and worst overall scores
differ by at least `min_margin` (and by more than nothing) the pair becomes a preference record in the
format of data/preferences. The best reply continues the dialogue and the client answers it.

Every role is a plain function over a `ChatBackend` (models.backends), so any backend plays any role;
each record names the model behind each role (`backend_label`) and the rubric version. Guidance is plain
text handed in by the caller (`guidance(situation, turns)`): retrieval lives in the flow layer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from models.backends import ChatBackend
from models.dialogue import infer_stage, render_turns
from models.rubric import CALIBRATION, JUDGE_SYSTEM, RUBRIC_VERSION, Judgement, judge_user_message, parse_judgement
from models.schema import STRATEGIES

__all__ = ["RUBRIC_VERSION", "Judgement", "parse_judgement", "build_preference_pairs"]

logger = logging.getLogger(__name__)

Turn = dict[str, Any]
Guidance = Callable[[str, Sequence[Turn]], str]

CLIENT_SYSTEM = (
    "You are role-playing a person who needs emotional support and is talking to a counselor. You are this "
    "person: {situation}{persona}. Write only what this person says next, in the first person, in one or two "
    "short sentences. Never act as the counselor."
)
COUNSELOR_SYSTEM = (
    "You are a warm, professional emotional-support counselor. Reply to the seeker in one to three short "
    "sentences: acknowledge their feelings, and ask or suggest only what fits where they are.\n"
    "Use this support strategy: {strategy} ({hint})."
)
GUIDANCE_BLOCK = "Guidance from the counselling knowledge base:\n{guidance}\n\n"

# The strategies a counselor candidate is asked to use (ESConv's, without the catch-all "Others").
STRATEGY_HINTS: dict[str, str] = {
    "Question": "ask an open question about what happened or how they feel",
    "Restatement or Paraphrasing": "say back in your own words what they told you",
    "Reflection of feelings": "name the feelings you hear",
    "Self-disclosure": "briefly share a similar experience, then return to them",
    "Affirmation and Reassurance": "affirm their strengths and reassure them",
    "Providing Suggestions": "offer one small, concrete next step",
    "Information": "give useful, accurate information",
}
_SEEKER_LABEL = re.compile(r"^\s*(?:seeker|client|me)\s*:\s*", re.I)  # small models often label the turn
CANDIDATE_STRATEGIES: tuple[str, ...] = tuple(s for s in STRATEGIES if s in STRATEGY_HINTS)

CLIENT_TOKENS, COUNSELOR_TOKENS, JUDGE_TOKENS = 64, 80, 72


@dataclass(frozen=True)
class Candidate:
    """One counselor reply and how it was asked for."""

    text: str
    strategy: str
    guided: bool


def backend_label(backend: ChatBackend) -> str:
    """Which model plays a role, for the record: the backend's `label` (never a URL or key), else its name."""
    return str(getattr(backend, "label", None) or backend.name)


def client_turn(
    backend: ChatBackend,
    situation: str,
    turns: Sequence[Turn],
    persona: str = "",
    max_tokens: int = CLIENT_TOKENS,
) -> str:
    """The seeker's next message (the opening one when `turns` is empty)."""
    about = f" ({persona.strip()})" if persona.strip() else ""
    messages = [{"role": "system", "content": CLIENT_SYSTEM.format(situation=situation.strip(), persona=about)}]
    for turn in turns:  # from the client's point of view the counselor is the other party
        role = "assistant" if turn["speaker"] == "seeker" else "user"
        messages.append({"role": role, "content": turn["text"]})
    if not turns:
        messages.append({"role": "user", "content": "Hi, what would you like to talk about today?"})
    return _SEEKER_LABEL.sub("", backend.complete(messages, max_tokens=max_tokens, temperature=0.8)).strip()


def candidate_plans(n: int, guided: bool, key: str) -> list[tuple[str, bool]]:
    """(strategy, guided) for `n` candidates: distinct strategies (cycling past 7) from a start fixed by
    `key`, and guidance on every other candidate (the first included) when there is guidance at all."""
    start = random.Random(key).randrange(len(CANDIDATE_STRATEGIES))
    return [(CANDIDATE_STRATEGIES[(start + i) % len(CANDIDATE_STRATEGIES)], guided and i % 2 == 0) for i in range(n)]


def counselor_replies(
    backend: ChatBackend,
    turns: Sequence[Turn],
    plans: Sequence[tuple[str, bool]],
    guidance: str = "",
    temperature: float = 0.9,
    max_tokens: int = COUNSELOR_TOKENS,
) -> list[Candidate]:
    """One reply per (strategy, guided) plan; guided candidates see `guidance` before the conversation."""
    replies = []
    for i, (strategy, guided) in enumerate(plans):
        block = GUIDANCE_BLOCK.format(guidance=guidance.strip()) if guided and guidance.strip() else ""
        messages = [
            {"role": "system", "content": COUNSELOR_SYSTEM.format(strategy=strategy, hint=STRATEGY_HINTS[strategy])},
            {
                "role": "user",
                "content": f"{block}Conversation so far:\n{render_turns(turns)}\n\nCandidate {i + 1}. Reply:",
            },
        ]
        text = backend.complete(messages, max_tokens=max_tokens, temperature=temperature)
        replies.append(Candidate(text.strip(), strategy, bool(block)))
    return replies


def judge(
    backend: ChatBackend,
    turns: Sequence[Turn],
    reply: str,
    stage: str = "Exploration",
    max_tokens: int = JUDGE_TOKENS,
    temperature: float = 0.0,
) -> Judgement:
    """The judge's rubric scores for one reply in its context (deterministic at the default temperature 0)."""
    messages = [{"role": "system", "content": JUDGE_SYSTEM}]
    for example, answer in CALIBRATION:
        messages += [{"role": "user", "content": example}, {"role": "assistant", "content": json.dumps(answer)}]
    messages.append({"role": "user", "content": judge_user_message(stage, render_turns(turns), reply)})
    return parse_judgement(backend.complete(messages, max_tokens=max_tokens, temperature=temperature))


def pair_record(
    conversation_id: str,
    step: int,
    context: Sequence[Turn],
    stage: str,
    best: tuple[Judgement, Candidate],
    worst: tuple[Judgement, Candidate],
    roles: dict[str, str],
) -> dict[str, Any]:
    """A data/preferences record with the ESC-Preference provenance fields (docs/preferences.md)."""
    (bj, bc), (wj, wc) = best, worst
    digest = hashlib.sha256(json.dumps([list(context), bc.text, wc.text]).encode()).hexdigest()[:8]
    return {
        "id": f"{conversation_id}-{step + 1}-{digest}",
        "conversation_id": conversation_id,
        "context": [dict(t) for t in context],
        "chosen": bc.text,
        "rejected": wc.text,
        "scores": {"chosen": bj.score, "rejected": wj.score},
        "criteria": {"chosen": dict(bj.criteria), "rejected": dict(wj.criteria)},
        "rationale": f"chosen: {bj.rationale or '(none)'} | rejected: {wj.rationale or '(none)'}",
        "stage": stage,
        "chosen_strategy": bc.strategy,
        "chosen_guided": bc.guided,
        "rejected_strategy": wc.strategy,
        "rejected_guided": wc.guided,
        "roles": dict(roles),
        "rubric_version": RUBRIC_VERSION,
    }


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
    persona: str = "",
    guidance: Guidance | None = None,
    max_tokens: int | None = None,
    judge_max_tokens: int = JUDGE_TOKENS,
    judge_temperature: float = 0.0,
    stats: Counter | None = None,
) -> list[dict[str, Any]]:
    """Preference records from one simulated conversation (see the module docstring).

    `max_tokens` bounds client and counselor turns (default: their own budgets); the judge samples at
    `judge_temperature` (0: greedy); `stats` (a Counter) is updated with candidates, guided, judged,
    unscored and pairs.
    """
    if candidates < 2:
        raise ValueError("candidates must be at least 2 to form a pair")
    stats = stats if stats is not None else Counter()
    roles = {
        "client": backend_label(client),
        "counselor": backend_label(counselor),
        "judge": backend_label(judge_backend),
    }
    opening = client_turn(client, situation, [], persona, max_tokens or CLIENT_TOKENS).strip()
    if not opening:
        logger.info("%s: the client wrote nothing; no conversation", conversation_id)
        return []
    dialogue: list[Turn] = [{"speaker": "seeker", "text": opening}]
    pairs = []
    for step in range(turns):
        stage = infer_stage(step / turns)
        text = guidance(situation, dialogue) if guidance else ""
        plans = candidate_plans(candidates, bool(text.strip()), f"{conversation_id}:{step}")
        replies = [
            c
            for c in counselor_replies(counselor, dialogue, plans, text, max_tokens=max_tokens or COUNSELOR_TOKENS)
            if c.text
        ]
        stats.update(candidates=len(plans), guided=sum(c.guided for c in replies))
        rated = [
            (judge(judge_backend, dialogue, c.text, stage, judge_max_tokens, judge_temperature), c) for c in replies
        ]
        stats.update(judged=len(rated))
        rated = [(j, c) for j, c in rated if j.score is not None]
        stats.update(unscored=len(replies) - len(rated))
        if not rated:
            logger.info("%s step %d: no reply could be rated; stopping", conversation_id, step)
            break
        rated.sort(key=lambda jc: jc[0].score, reverse=True)
        best, worst = rated[0], rated[-1]
        gap = best[0].score - worst[0].score
        if len(rated) >= 2 and gap > 0 and gap >= min_margin and best[1].text != worst[1].text:
            pairs.append(pair_record(conversation_id, step, dialogue, stage, best, worst, roles))
            stats.update(pairs=1)
        dialogue.append({"speaker": "supporter", "text": best[1].text})
        if step + 1 < turns:
            answer = client_turn(client, situation, dialogue, persona, max_tokens or CLIENT_TOKENS).strip()
            if not answer:
                break
            dialogue.append({"speaker": "seeker", "text": answer})
    return pairs
