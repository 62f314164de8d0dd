"""Turn dialogues into prompts: one example per (dialogue prefix → gold supporter reply).

The same builder feeds the cold-start SFT, GRPO and evaluation, so all three see the same prompt form.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from models.dialogue import contexts_for_training, infer_stage, last_seeker_text, render_turns, retrieval_query
from models.prompts import build_prompt
from models.reward_model import CONTEXT_TURNS as REWARD_CONTEXT_TURNS

# Older turns are dropped so prompts stay short on a CPU.
MAX_CONTEXT_TURNS = 4

STAGE_REASON = {
    "Exploration": "first understand what happened",
    "Comforting": "they need to feel heard",
    "Action": "they are ready for a next step",
}


def _stable_order(key: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def build_examples(
    dialogues: Sequence[dict[str, Any]],
    search,
    tokenizer,
    *,
    k: int,
    max_examples: int,
    seed: int,
) -> list[dict[str, Any]]:
    """Examples with the prompt and the columns reward functions read, in a seed-stable order.

    `search(query, k)` returns guidance passages (dicts with strategy, stage, title, text).
    """
    candidates = []
    for dialogue in dialogues:
        for i, context in enumerate(contexts_for_training(dialogue)):
            candidates.append((_stable_order(f"{dialogue['id']}:{i}", seed), dialogue, context))
    candidates.sort(key=lambda c: c[0])
    return [example_for(d, ctx, search, tokenizer, k) for _, d, ctx in candidates[:max_examples]]


def prompt_for(
    context: Sequence[dict[str, Any]], situation: str, search, tokenizer, k: int
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The policy's prompt for the reply after `context`: the turns it shows and the passages retrieved by
    the documented query rule. Training, evaluation and serving all build prompts here."""
    passages = search(retrieval_query(situation, context), k)
    shown = list(context[-MAX_CONTEXT_TURNS:])
    return build_prompt(tokenizer, shown, passages), shown, passages


def example_for(dialogue: dict[str, Any], context: list[dict[str, Any]], search, tokenizer, k: int) -> dict[str, Any]:
    """The prompt for the reply after `context`, the passages and turns it shows, and the reward columns."""
    turns = dialogue["turns"]
    gold = turns[len(context)]
    stage = infer_stage(len(context) / len(turns), gold.get("strategy"))
    prompt, shown, passages = prompt_for(context, dialogue.get("situation", ""), search, tokenizer, k)
    return {
        "prompt": prompt,
        "shown_turns": shown,
        "passages": passages,
        "dialogue_id": dialogue["id"],
        "guidance": [p["text"] for p in passages],
        "guidance_strategies": [p["strategy"] for p in passages],
        "guidance_titles": [p["title"] for p in passages],
        "stage": stage,
        "seeker_text": last_seeker_text(context),
        "context_text": render_turns(context[-REWARD_CONTEXT_TURNS:]),  # the reward model reads more than the prompt
        "gold_reply": gold["text"],
        "gold_strategy": gold.get("strategy") or "Others",
        "emotion": dialogue.get("emotion") or "distressed",
    }


def cold_start_completion(example: dict[str, Any]) -> str:
    """A reasoning-then-reply target built from the gold strategy and the retrieved guidance."""
    strategy = example["gold_strategy"]
    titles = example["guidance_titles"]
    matching = [i for i, s in enumerate(example["guidance_strategies"], 1) if s == strategy] or [1]
    think = (
        f"Stage: {example['stage']}. They feel {example['emotion']}. "
        f"{strategy} fits: {STAGE_REASON[example['stage']]}. "
        f"Guidance [{matching[0]}] ({titles[matching[0] - 1] if titles else 'support'}) applies."
    )
    return f"{think}</think>\n{example['gold_reply']}"
