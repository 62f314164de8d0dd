"""The serving safety layer: the last check between the policy and the seeker.

It reads the reply with the one safety assessment (models.safety.assess), against every seeker turn of
the conversation, so risk said three turns ago still counts. Two events replace the reply with the
configured crisis reply (params.yaml `serve.crisis`):

- `blocked_means`: the reply gives means, methods or harmful encouragement. Never returned, at any risk.
- `replaced_unsafe`: the seeker shows risk (P(risk) at least `Thresholds.serving_risk`) and the reply does not
  meet the crisis protocol (acknowledge, care, point to help), i.e. the assessment scores it at most
  UNSAFE_SCORE_LIMIT.

Each event is counted (`counts`) and flagged in the result. Nothing of the conversation is logged.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from models.dialogue import Turn
from models.safety.assess import UNSAFE_SCORE_LIMIT, SafetyAssessment, SafetyAssessor

logger = logging.getLogger(__name__)

KEPT, BLOCKED_MEANS, REPLACED_UNSAFE = "kept", "blocked_means", "replaced_unsafe"
EVENTS = (BLOCKED_MEANS, REPLACED_UNSAFE)


class UnsafeCrisisReplyError(ValueError):
    """The configured crisis reply does not pass the safety assessment itself."""


@dataclass(frozen=True)
class Guarded:
    """The reply the seeker gets, and what the layer did."""

    reply: str
    action: str  # KEPT or one of EVENTS
    risk: bool
    risk_probability: float
    score: float  # the assessment's score of the policy's own reply
    reasons: list[str] = field(default_factory=list)

    @property
    def replaced(self) -> bool:
        return self.action != KEPT


def seeker_words(turns: Sequence[Turn]) -> str:
    """Every seeker turn, oldest first: what risk is read from."""
    return " ".join(t["text"].strip() for t in turns if t.get("speaker") == "seeker")


def _reasons(assessment: SafetyAssessment, at_risk: bool) -> list[str]:
    reasons = []
    if assessment.harmful:
        reasons.append("means, methods or harmful encouragement")
    if assessment.dismissive:
        reasons.append("dismisses or minimises the risk")
    if at_risk and assessment.score <= UNSAFE_SCORE_LIMIT and not assessment.harmful:
        reasons.append("does not meet the crisis protocol: acknowledge, care, point to immediate help")
    return reasons


def layer_action(assessment: SafetyAssessment, serving_risk: float) -> str:
    """KEPT, or the event that replaces the reply: means at any risk; from P(risk) `serving_risk`, a reply that
    fails the crisis protocol."""
    if assessment.harmful:
        return BLOCKED_MEANS
    if assessment.risk_level >= serving_risk and assessment.score <= UNSAFE_SCORE_LIMIT:
        return REPLACED_UNSAFE
    return KEPT


class SafetyLayer:
    """Checks replies against the conversation; swaps in `crisis_reply` when one is unsafe."""

    def __init__(self, assessor: SafetyAssessor, crisis_reply: str) -> None:
        self.assessor = assessor
        self.crisis_reply = crisis_reply
        self.counts: Counter[str] = Counter()

    def verify_crisis_reply(self, crisis_turns: Sequence[Turn]) -> float:
        """The crisis reply's own score for `crisis_turns`; raises unless it is safe there."""
        assessment = self.assessor.assess(self.crisis_reply, seeker_words(crisis_turns))
        if assessment.harmful or assessment.dismissive or assessment.score <= UNSAFE_SCORE_LIMIT:
            raise UnsafeCrisisReplyError(
                f"serve.crisis.reply scores {assessment.score:.2f} for a seeker at risk (needs > "
                f"{UNSAFE_SCORE_LIMIT}): it must acknowledge, care and point to immediate help"
            )
        return assessment.score

    def check(self, reply: str, turns: Sequence[Turn]) -> Guarded:
        """The reply to return for `turns`, and why."""
        assessment = self.assessor.assess(reply, seeker_words(turns))
        serving_risk = self.assessor.thresholds.serving_risk
        at_risk = assessment.risk_level >= serving_risk
        action = layer_action(assessment, serving_risk)
        self.counts["replies"] += 1
        if action != KEPT:
            self.counts[action] += 1
            logger.warning("safety layer: %s (%d so far)", action, self.counts[action])
        return Guarded(
            reply=reply if action == KEPT else self.crisis_reply,
            action=action,
            risk=at_risk,
            risk_probability=assessment.risk_probability,
            score=assessment.score,
            reasons=_reasons(assessment, at_risk),
        )
