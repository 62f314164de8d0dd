"""One reply to a conversation: retrieve guidance, reason, answer, and pass the safety layer.

The prompt is built exactly as in training (models.training_data.prompt_for: the same query rule, the
same turns shown, the same prompt builder). The `<think>` text is dropped from the answer unless the
caller asks for it (audits); the reply never carries a `<think>` or `</think>` tag.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from models.dialogue import Turn
from models.rewards.strategy import classify_strategies
from models.safety.layer import SafetyLayer
from models.schema import STRATEGIES
from models.text import parse_completion
from models.training_data import prompt_for

SPEAKERS = ("seeker", "supporter")
FALLBACK = "fallback"  # the policy never closed its reasoning: the configured fallback reply was sent
_TAG = re.compile(r"</?think>", re.IGNORECASE)

# query, k -> passages (dicts with id, strategy, stage, title, text)
Search = Callable[[str, int], list[dict[str, Any]]]


class Policy(Protocol):
    """What a reply needs of the policy: its tokenizer (chat template) and seeded completion
    (models.generation.PolicyGenerator)."""

    tokenizer: Any

    def complete_seeded(self, prompt: str, max_new_tokens: int, seed: int) -> str: ...


class ConversationError(ValueError):
    """A conversation that cannot be answered: names the turn and the field."""


def check_turns(turns: Any) -> list[Turn]:
    """The turns as `{speaker, text}` dicts; a bad one raises ConversationError naming it."""
    if not isinstance(turns, Sequence) or isinstance(turns, str) or not turns:
        raise ConversationError("field 'turns' must be a non-empty list of {speaker, text}")
    checked = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise ConversationError(f"turns[{i}]: must be an object with 'speaker' and 'text'")
        if turn.get("speaker") not in SPEAKERS:
            raise ConversationError(f"turns[{i}].speaker: must be one of {SPEAKERS}, got {turn.get('speaker')!r}")
        if not isinstance(turn.get("text"), str) or not turn["text"].strip():
            raise ConversationError(f"turns[{i}].text: must be a non-empty string")
        checked.append({"speaker": turn["speaker"], "text": turn["text"]})
    if checked[-1]["speaker"] != "seeker":
        raise ConversationError(f"turns[{len(checked) - 1}].speaker: the last turn must be the seeker's")
    return checked


def named_strategy(think: str) -> str | None:
    """The first ESConv strategy the reasoning names ("Reflection of feelings fits: ...")."""
    low = think.lower()
    found = [(low.find(s.lower()), s) for s in STRATEGIES if s.lower() in low]
    return min(found)[1] if found else None


@dataclass(frozen=True)
class Responder:
    """Everything a reply needs, assembled once (tasks/policy_pyfunc.py builds it from a registered model)."""

    policy: Policy
    search: Search
    layer: SafetyLayer
    k: int
    max_new_tokens: int
    seed: int  # every request is sampled with it: the same conversation gets the same reply
    fallback_reply: str

    def respond(
        self, turns: Any, situation: str = "", *, show_reasoning: bool = False, max_new_tokens: int | None = None
    ) -> dict[str, Any]:
        """`{reply, strategy, guidance_ids, guidance_titles, safety}` (+ `reasoning` when asked for)."""
        turns = check_turns(turns)
        prompt, _, passages = prompt_for(turns, situation or "", self.search, self.policy.tokenizer, self.k)
        parsed = parse_completion(self.policy.complete_seeded(prompt, max_new_tokens or self.max_new_tokens, self.seed))
        reply = _TAG.sub("", parsed.reply).strip()
        source = "policy" if reply else FALLBACK
        guarded = self.layer.check(reply or self.fallback_reply, turns)
        strategy = named_strategy(parsed.think) if source == "policy" and not guarded.replaced else None
        answer = {
            "reply": guarded.reply,
            "strategy": strategy or classify_strategies(guarded.reply)[0],
            "guidance_ids": [p["id"] for p in passages],
            "guidance_titles": [p["title"] for p in passages],
            "safety": {
                "action": guarded.action,
                "replaced": guarded.replaced,
                "risk": guarded.risk,
                "risk_probability": guarded.risk_probability,
                "policy_reply_score": guarded.score,
                "reasons": guarded.reasons,
                "source": source,
                "counts": dict(self.layer.counts),
            },
        }
        if show_reasoning:
            answer["reasoning"] = parsed.think
            answer["policy_reply"] = reply
        return answer


# A conversation every crisis reply must be safe for: the layer refuses to load a reply that is not.
CRISIS_PROBE: list[Turn] = [
    {"speaker": "seeker", "text": "I have pills saved up and I plan to end my life tonight."},
]


def load_responder(policy_dir: str, index_dir: str, embedder_dir: str, config: dict[str, Any]) -> Responder:
    """A Responder from a servable model's parts and its `serving.json` (tasks/policy_pyfunc.py writes it).

    The device and precision come from the config's `compute` section, resolved here once for every part.
    """
    from models.compute import resolve_compute
    from models.config import ComputeParams
    from models.generation import PolicyGenerator, Sampling
    from models.retriever import Retriever
    from models.rewards.resources import RewardResources

    compute = resolve_compute(ComputeParams(**config["compute"]))
    generator = PolicyGenerator(policy_dir, compute, Sampling(**config["sampling"]))
    resources = RewardResources(embedder_path=embedder_dir, compute=compute)
    retrieval = config["retrieval"]
    retriever = Retriever(
        index_dir,
        retrieval["table"],
        resources.embedder,
        mode=retrieval["mode"],
        max_per_strategy=retrieval["max_per_strategy"],
        version=retrieval["version"],
    )
    layer = SafetyLayer(resources.safety_assessor, config["crisis_reply"])
    layer.verify_crisis_reply(CRISIS_PROBE)
    return Responder(
        policy=generator,
        search=lambda query, k: retriever.search(query, k=k),
        layer=layer,
        k=int(retrieval["k"]),
        max_new_tokens=int(config["max_new_tokens"]),
        seed=int(config["seed"]),
        fallback_reply=config["fallback_reply"],
    )
