"""The reply path of the served model, with stand-ins for the policy, the index and the embedder: what is
returned, what never is, and when the safety layer swaps the reply."""

from __future__ import annotations

import numpy as np
import pytest

from models.config import CrisisParams, ParamsError, load_params
from models.responder import ConversationError, Responder, check_turns, named_strategy
from models.safety import SafetyAssessor
from models.safety.layer import BLOCKED_MEANS, KEPT, REPLACED_UNSAFE, SafetyLayer
from models.safety.probes import LinearProbe
from tasks.policy_pyfunc import conversations

CRISIS_REPLY = CrisisParams().text()
PASSAGES = [
    {"id": "p1", "strategy": "Question", "stage": "Exploration", "title": "Open questions", "text": "Ask."},
    {"id": "p2", "strategy": "Reflection of feelings", "stage": "Comforting", "title": "Mirror", "text": "Mirror."},
]


class ChatTemplate:
    """Applies a plain chat template, like a tokenizer would."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):  # noqa: ANN001, ANN201
        return "\n".join(f"<{m['role']}>{m['content']}" for m in messages) + "\n<assistant>"


def _layer(risk_bias: float, safe_bias: float) -> SafetyLayer:
    zero = np.zeros(4, dtype=np.float32)
    probes = {"risk": LinearProbe(zero, risk_bias), "safe_reply": LinearProbe(zero, safe_bias)}
    assessor = SafetyAssessor(lambda texts: np.ones((len(texts), 4), dtype=np.float32) / 2, probes=probes)
    return SafetyLayer(assessor, CRISIS_REPLY)


class FixedPolicy(ChatTemplate):
    """A policy that completes every prompt alike, and keeps what it was asked."""

    def __init__(self, completion: str) -> None:
        self.completion = completion
        self.tokenizer = self
        self.asked: list[tuple[str, int, int]] = []

    def complete_seeded(self, prompt: str, max_new_tokens: int, seed: int) -> str:
        self.asked.append((prompt, max_new_tokens, seed))
        return self.completion


def _responder(completion: str, layer: SafetyLayer, policy: FixedPolicy | None = None) -> Responder:
    policy = policy or FixedPolicy(completion)
    return Responder(policy, lambda q, k: PASSAGES[:k], layer, 2, 64, 7, "Tell me more?")


TURNS = [
    {"speaker": "seeker", "text": "I failed my driving test again."},
    {"speaker": "supporter", "text": "That sounds disappointing."},
    {"speaker": "seeker", "text": "I feel stupid."},
]


def test_reply_drops_the_reasoning_and_carries_strategy_and_guidance() -> None:
    completion = "Stage: Comforting. Reflection of feelings fits.</think>\nIt sounds like you feel let down."
    policy = FixedPolicy(completion)
    answer = _responder(completion, _layer(-9.0, 9.0), policy).respond(TURNS)
    assert answer["reply"] == "It sounds like you feel let down."
    assert "think" not in answer["reply"] and "reasoning" not in answer
    assert answer["strategy"] == "Reflection of feelings"
    assert answer["guidance_ids"] == ["p1", "p2"] and answer["guidance_titles"] == ["Open questions", "Mirror"]
    assert answer["safety"]["action"] == KEPT and not answer["safety"]["replaced"]
    [(prompt, max_new_tokens, seed)] = policy.asked
    assert "I feel stupid." in prompt and "Open questions" in prompt and (max_new_tokens, seed) == (64, 7)


def test_reasoning_only_when_asked_for() -> None:
    answer = _responder("Question fits.</think>\nWhat happened?", _layer(-9.0, 9.0)).respond(TURNS, show_reasoning=True)
    assert answer["reasoning"] == "Question fits." and answer["reply"] == "What happened?"


def test_stray_think_tags_never_reach_the_seeker() -> None:
    answer = _responder("x</think>\nOkay <think>hmm</think> I hear you.", _layer(-9.0, 9.0)).respond(TURNS)
    assert "<think>" not in answer["reply"] and "</think>" not in answer["reply"]


def test_unclosed_reasoning_sends_the_fallback_reply() -> None:
    answer = _responder("I keep thinking and never stop", _layer(-9.0, 9.0)).respond(TURNS)
    assert answer["reply"] == "Tell me more?" and answer["safety"]["source"] == "fallback"


def test_risk_with_an_unsafe_reply_is_replaced_by_the_crisis_reply_and_counted() -> None:
    responder = _responder("Question fits.</think>\nAnyway, what are your plans for the weekend?", _layer(9.0, -9.0))
    crisis = [{"speaker": "seeker", "text": "I have pills saved up and I plan to end my life tonight."}]
    first = responder.respond(crisis)
    second = responder.respond(crisis)
    assert first["reply"] == CRISIS_REPLY and first["safety"]["action"] == REPLACED_UNSAFE
    assert first["safety"]["risk"] and first["safety"]["reasons"]
    assert second["safety"]["counts"] == {"replies": 2, REPLACED_UNSAFE: 2}


def test_means_are_blocked_even_without_risk() -> None:
    answer = _responder("x</think>\nTake 40 pills of paracetamol with vodka.", _layer(-9.0, 9.0)).respond(TURNS)
    assert answer["safety"]["action"] == BLOCKED_MEANS and answer["reply"] == CRISIS_REPLY


@pytest.mark.parametrize(
    ("turns", "named"),
    [
        ([], "turns"),
        ([{"speaker": "robot", "text": "hi"}], "turns[0].speaker"),
        ([{"speaker": "seeker", "text": "  "}], "turns[0].text"),
        ([{"speaker": "seeker", "text": "hi"}, {"speaker": "supporter", "text": "yo"}], "turns[1].speaker"),
    ],
)
def test_bad_conversations_name_the_turn_and_field(turns: list, named: str) -> None:
    with pytest.raises(ConversationError, match=named.replace("[", r"\[").replace("]", r"\]")):
        check_turns(turns)


def test_named_strategy_is_the_first_one_the_reasoning_names() -> None:
    assert named_strategy("Question? No: Affirmation and Reassurance fits, then a Question.") == "Question"
    assert named_strategy("They feel sad.") is None


def test_conversations_accepts_a_dict_a_list_and_a_table() -> None:
    import pandas as pd

    one = {"turns": TURNS}
    assert conversations(one) == [(TURNS, "")]
    assert conversations([one, {**one, "situation": "exam"}])[1] == (TURNS, "exam")
    table = pd.DataFrame([{"turns": np.array(TURNS, dtype=object), "situation": None}])
    assert conversations(table) == [(TURNS, "")]


def test_crisis_reply_placeholders_are_checked(tmp_path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("serve:\n  crisis:\n    reply: 'Call {hotline} now, please, you matter to me.'\n")
    with pytest.raises(ParamsError, match="serve.crisis.reply"):
        load_params(path)
