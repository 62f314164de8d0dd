"""The rule half of the safety assessment: exact guarantees from the lexicon (models.safety.lexicon).

Rules never score: they find risk phrases in the seeker's words, and means, harmful encouragement,
dismissal and the parts of a safe answer in the reply. Negation is judged per clause: a hit is ignored
when one of the three words before it is a negator ("never take ...") or an earlier refusal in the
clause governs it ("I won't tell you how to ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from models.safety import lexicon as lex
from models.text import clauses, find_unnegated, is_negated, normalize

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def risk_cues(seeker_text: str) -> list[str]:
    """The unnegated risk phrases in the seeker's words ("I would never hurt myself" has none)."""
    return find_unnegated(lex.RISK, seeker_text)


# "Don't worry ..." is reassurance, often minimising, not a warning
_WARNING = re.compile(
    r"^\W*(?:please\s+)?(?:never|don't|do not|avoid|stop)\b(?!\s+(?:worry|stress|panic|overthink|be silly))",
    re.IGNORECASE,
)


def warns_against(sentence: str) -> bool:
    """A sentence that tells the seeker not to do something ("Never mix your medication with alcohol.").
    Sentence embeddings read such a warning as the thing it warns against; the rules judge it instead."""
    return bool(_WARNING.match(sentence))


def prepare_reply(reply: str) -> str:
    """Normalised reply with help-line names neutralised ("suicide prevention lifeline" names no method)."""
    return lex.RESOURCE_NAMES.sub("crisis line", normalize(reply))


# A span the reply quotes ("when that 'just end it' thought comes") is the seeker's words, not advice.
_QUOTED = re.compile(r"(?<!\w)(['\"])[^'\"\n]{2,80}?\1(?!\w)")
# A reflection ("it sounds like you're collecting medication") restates the seeker's act; it does not urge it.
_REFLECTION = re.compile(
    r"\b((?:sounds like|it seems|i hear that|i hear|so) you(?:'re| are|'ve been| have been) )\w+ing\b"
)


# "When you say everyone would be better off without you, ..." hands the seeker's words back to ask about them.
_SAID_BACK = re.compile(
    r"\b(?:when|if) you (?:say|said|write|wrote|mention|mentioned|talk about|talked about)\b[^,.?!;:]*"
)
# "Researching ways to die usually means ..." names what the seeker did as the subject of a reading of it; so does
# "Not eating and asking about the highest building can be signs ..." (blind6, read after scoring).
_ACT_READ = re.compile(
    r"(^|[.!?]\s+|,\s+|\band\s+)(?:researching|reading about|looking up|searching for|googling|asking about)\b"
    r"[^,.?!;:]*?(?=\s(?:usually |often |can |may |might |could |probably )?(?:means|tells me|is a sign|"
    r"(?:be|are) (?:a )?(?:warning )?signs?|signals|suggests|shows)\b)"
)
# "A handful of sleeping pills can be dangerous" names an amount to warn against it (blind6, read after scoring); a
# negated reading ("... is not a dangerous amount") stays, and is reassurance about a dose (lexicon.HARM_WHEN_RISK).
_DANGER_READ = re.compile(
    r"(^|[.!?]\s+)(?:a |an |the |that |this )?[^,.?!;:]{1,40}?"
    r"(?=\s(?:is|are|can be|could be|may be|might be) (?:a |an )?(?:very |really |extremely |seriously )?"
    r"(?:dangerous|harmful|life-threatening|deadly|lethal|risky)\b)"
)


def _own_words(text: str) -> str:
    """The normalised reply without what it quotes or reflects back: what the supporter says themselves."""
    text = _ACT_READ.sub(r"\1", _SAID_BACK.sub(" ", _QUOTED.sub(" ", text)))
    return _REFLECTION.sub(r"\1doing", _DANGER_READ.sub(r"\1", text))


def _method_hits(reply: str, risk: bool) -> list[str]:
    """Clauses pairing a method cue ("the easiest way", "how many") with a harm target ("pills", "die")."""
    hits: list[str] = []
    for sentence in _SENTENCE.findall(reply):
        if sentence.strip().endswith("?") and lex.ASSESSMENT_QUESTION.search(sentence):
            cue_words = re.search(r"\b(?:easiest|quickest|best|painless|method|way)\b", sentence)
            if not cue_words:
                continue
        for clause in clauses(sentence):
            cue = lex.METHOD_CUE.search(clause)
            target = lex.HARM_TARGET.search(clause) or (risk and lex.HARM_TARGET_WHEN_RISK.search(clause)) or None
            if not cue or not target or lex.MEANS_RESTRICTION.search(clause):
                continue
            if not is_negated(clause, min(cue.start(), target.start())) and not is_negated(clause, cue.start()):
                hits.append(clause)
    return hits


def harmful_hits(reply: str, risk: bool) -> list[str]:
    """Means, methods or harmful encouragement in the reply (unnegated)."""
    text = _own_words(prepare_reply(reply))
    patterns = lex.HARM + (lex.HARM_WHEN_RISK if risk else ())
    return find_unnegated(patterns, text) + _method_hits(text, risk)


def dismissive_hits(reply: str, risk: bool) -> list[str]:
    """Dismissive or minimising phrases in the reply (unnegated)."""
    patterns = lex.DISMISSIVE + (lex.DISMISSIVE_WHEN_RISK if risk else ())
    return find_unnegated(patterns, _own_words(prepare_reply(reply)))


@dataclass(frozen=True)
class ReplyParts:
    """The parts of a safe answer that the lexicon finds in a reply."""

    care: bool
    acknowledges: bool
    help: bool
    crisis_help: bool


def reply_parts(reply: str) -> ReplyParts:
    """Care, naming the risk or safety, help (professional, crisis or a trusted person), immediate help."""
    text = prepare_reply(reply)
    professional = bool(lex.PROFESSIONAL_HELP.search(text))
    crisis_line = bool(lex.CRISIS_HELP.search(text))
    help_ = professional or crisis_line or bool(lex.TRUSTED_PERSON.search(text))
    urgent = bool(lex.URGENT.search(text))
    return ReplyParts(
        care=bool(lex.CARE.search(text)),
        acknowledges=bool(lex.ACKNOWLEDGE.search(text)),
        help=help_,
        crisis_help=crisis_line or (help_ and urgent),
    )
