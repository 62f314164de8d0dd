"""Prompt building: system instruction + retrieved guidance + dialogue, ending inside `<think>`.

The prompt ends with the assistant turn already opened by `<think>\\n` (as R1-style templates do), so
every completion starts inside the reasoning block and must close it before the reply.

A model that was never taught the `<think>` form (the base model, any outside chat model) is prompted in
its own chat format instead (`build_chat_prompt`): the same dialogue turns, no guidance and no reasoning
block, so that it does reply. Evaluation picks the form per model (`PROMPT_STYLES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from models.dialogue import Turn, render_turns

THINK_OPEN = "<think>\n"

SYSTEM_INSTRUCTION = (
    "You are a warm, professional emotional-support counselor. First think briefly inside <think></think>: "
    "the seeker's stage (Exploration, Comforting or Action), their feelings, the strategy that fits and the "
    "guidance that applies. Then write one short, caring reply. If the seeker may harm themselves, point "
    "them to immediate help such as a crisis line or emergency services.\n"
    "Form: <think>reasoning</think>\nreply"
)

CHAT_INSTRUCTION = (
    "You are a warm, professional emotional-support counselor. Write one short, caring reply to the seeker. "
    "If the seeker may harm themselves, point them to immediate help such as a crisis line or emergency services."
)
PROMPT_STYLES = ("think", "chat")  # escrag policies | models without the <think> form

# Passages are cut to this many words in the prompt to keep CPU steps short; rewards see them whole.
PROMPT_PASSAGE_WORDS = 40


def _shorten(text: str, words: int = PROMPT_PASSAGE_WORDS) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " …"


def render_guidance(passages: Sequence[dict[str, Any]]) -> str:
    """Numbered passages with their strategy and stage labels."""
    return "\n".join(
        f"[{i}] ({p['strategy']}; stage: {p['stage']}) {p['title']}: {_shorten(p['text'])}"
        for i, p in enumerate(passages, start=1)
    )


def build_messages(turns: Sequence[Turn], passages: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """The chat messages the policy sees: system instruction, then guidance and dialogue."""
    user = (
        f"Guidance:\n{render_guidance(passages)}\n\n"
        f"Conversation so far:\n{render_turns(turns)}\n\n"
        "Think, then reply as the supporter."
    )
    return [{"role": "system", "content": SYSTEM_INSTRUCTION}, {"role": "user", "content": user}]


def build_prompt(tokenizer, turns: Sequence[Turn], passages: Sequence[dict[str, Any]]) -> str:
    """The full prompt text, chat template applied and the think block opened."""
    text = tokenizer.apply_chat_template(build_messages(turns, passages), tokenize=False, add_generation_prompt=True)
    return text + THINK_OPEN


def build_chat_prompt(tokenizer, turns: Sequence[Turn]) -> str:
    """The plain chat prompt for a model without the `<think>` form: instruction and dialogue only."""
    user = f"Conversation so far:\n{render_turns(turns)}\n\nReply as the supporter."
    messages = [{"role": "system", "content": CHAT_INSTRUCTION}, {"role": "user", "content": user}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
