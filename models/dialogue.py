"""Dialogue helpers shared by prompts, retrieval queries, rewards and evaluation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Turn = dict[str, Any]

# How many of the latest seeker turns go into a retrieval query (see `retrieval_query`).
QUERY_SEEKER_TURNS = 2


def render_turns(turns: Sequence[Turn]) -> str:
    """Render turns as 'Seeker: …' / 'Supporter: …' lines, the one text form every model sees."""
    return "\n".join(f"{t['speaker'].capitalize()}: {t['text'].strip()}" for t in turns)


def last_seeker_text(turns: Sequence[Turn], n: int = QUERY_SEEKER_TURNS) -> str:
    """The text of the last `n` seeker turns, oldest first."""
    seeker = [t["text"].strip() for t in turns if t["speaker"] == "seeker"]
    return " ".join(seeker[-n:])


def retrieval_query(situation: str, turns: Sequence[Turn]) -> str:
    """The documented query rule: the last two seeker turns; the situation only before the seeker spoke.

    Used alike by training prompts, evaluation and `escrag search --dialogue`. The situation was part of
    every query at first, but it is the same for the whole conversation and outweighed what the seeker
    just said: on ESConv's valid conversations strategy-hit@5 of hybrid search was 0.670 with it and
    0.692 without (docs/retrieval.md).
    """
    return last_seeker_text(turns) or situation.strip()


def contexts_for_training(dialogue: dict[str, Any]) -> list[list[Turn]]:
    """Every prefix of a dialogue that ends on a seeker turn followed by a supporter reply."""
    turns = dialogue["turns"]
    return [
        list(turns[: i + 1])
        for i in range(len(turns) - 1)
        if turns[i]["speaker"] == "seeker" and turns[i + 1]["speaker"] == "supporter"
    ]


# Which stage of helping a supporter strategy belongs to (Hill's model as ESConv uses it).
STRATEGY_STAGE = {
    "Question": "Exploration",
    "Restatement or Paraphrasing": "Exploration",
    "Reflection of feelings": "Comforting",
    "Self-disclosure": "Comforting",
    "Affirmation and Reassurance": "Comforting",
    "Providing Suggestions": "Action",
    "Information": "Action",
}


def infer_stage(position: float, next_strategy: str | None = None) -> str:
    """The conversation's stage: from the gold next strategy where it says, else by position (0..1)."""
    if next_strategy in STRATEGY_STAGE:
        return STRATEGY_STAGE[next_strategy]
    return "Exploration" if position < 1 / 3 else "Comforting" if position < 2 / 3 else "Action"
