"""Text helpers shared by the reward functions: completion parsing, normalisation, clauses, negation."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "`": "'"})
# Contractions typed without the apostrophe; "its"/"were"/"well" are left alone (real words).
_BARE_CONTRACTIONS = re.compile(
    r"\b(dont|cant|wont|im|ive|youre|isnt|arent|doesnt|didnt|wouldnt|shouldnt|couldnt|thats|theres|whats)\b"
)
_CONTRACTION_FIX = {
    "dont": "don't",
    "cant": "can't",
    "wont": "won't",
    "im": "i'm",
    "ive": "i've",
    "youre": "you're",
    "isnt": "isn't",
    "arent": "aren't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "wouldnt": "wouldn't",
    "shouldnt": "shouldn't",
    "couldnt": "couldn't",
    "thats": "that's",
    "theres": "there's",
    "whats": "what's",
}
# Clause boundaries: sentence punctuation, commas, and contrastive or sequencing conjunctions.
_CLAUSE_SPLIT = re.compile(r"[.!?;:\n]+|,|\s[-\u2013\u2014]+\s|\s(?:but|however|though|although|then|or)\s")
# Words that negate what follows them closely ("never take", "don't use", "not an option").
NEGATORS = frozenset(
    "not never no don't won't can't cannot wouldn't shouldn't isn't aren't didn't doesn't mustn't "
    "nor without avoid instead refuse stop".split()
)
# A refusal anywhere earlier in the clause negates what follows ("I won't tell you how to ...").
_REFUSAL = re.compile(
    r"\b(?:never|not|won't|can't|cannot|don't|wouldn't|refuse to|will not|would not|do not)\b"
    r"(?:\s+\w+){0,3}?\s+(?:tell|say|pretend|give|share|help(?: you)? with|provide|describe|explain|list|suggest|"
    r"recommend|offer|discuss|encourage|support|go into|leave|let|allow)\b"
)
# Idioms that contain a negator but do not negate what follows.
_NEUTRAL_IDIOMS = re.compile(
    r"\b(?:don't|do not) hesitate to\b|\b(?:don't|do not) be afraid to\b|\b(?:don't|do not) wait to\b|"
    r"\bwhy not\b|\bwhy (?:don't|do not) you\b|\bnot a bad idea\b|\bno reason not to\b|\bnever too late to\b|"
    r"\bnot only\b|"
    r"\b(?:don't|do not) worry\b|\bno worries\b|\bno pressure\b|\bno judg(?:e)?ment\b|\bnot judging\b|"
    r"\bnot alone\b|\bnot your fault\b|\bnot going anywhere\b"
)


@dataclass(frozen=True)
class ParsedCompletion:
    """A completion split into its reasoning and its reply."""

    think: str
    reply: str
    well_formed: bool
    closed: bool
    raw: str


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a plain string, or the content of chat messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    if isinstance(completion, Sequence):
        return "".join(completion_text(m) for m in completion)
    return "" if completion is None else str(completion)


def parse_completion(text: str) -> ParsedCompletion:
    """Split a completion; see `split_completion`. Also says whether the think block was closed."""
    body = text.strip()
    if body.startswith(THINK_OPEN):
        body = body[len(THINK_OPEN) :]
    if THINK_CLOSE not in body:
        return ParsedCompletion(body.strip(), "", False, False, text)
    think, _, reply = body.partition(THINK_CLOSE)
    think, reply = think.strip(), reply.strip()
    clean = body.count(THINK_CLOSE) == 1 and THINK_OPEN not in body
    return ParsedCompletion(think, reply, clean and bool(think) and bool(reply), True, text)


def split_completion(text: str) -> tuple[str, str, bool]:
    """Split "<think>reasoning</think>reply" or the prefilled form "reasoning</think>reply".

    Returns (think, reply, well_formed). Without a closing tag everything is reasoning and the reply is
    empty. `well_formed` means: exactly one `</think>`, no further `<think>`, and non-empty reasoning
    and reply. With several closing tags the reply is everything after the first one.
    """
    parsed = parse_completion(text)
    return parsed.think, parsed.reply, parsed.well_formed


def normalize(text: str) -> str:
    """Lower-case, straighten quotes, restore bare contractions ("dont" -> "don't"), squash spaces."""
    low = (text or "").translate(_QUOTES).lower()
    low = _BARE_CONTRACTIONS.sub(lambda m: _CONTRACTION_FIX[m.group(1)], low)
    return re.sub(r"[ \t]+", " ", low)


def words(text: str) -> list[str]:
    """Lower-case word tokens (contractions kept whole)."""
    return _WORD.findall(normalize(text))


def word_count(text: str) -> int:
    """How many words a text has."""
    return len(words(text))


def clauses(text: str) -> list[str]:
    """Normalised clauses: the scope inside which negation and patterns are judged."""
    norm = _NEUTRAL_IDIOMS.sub(" ", normalize(text))
    return [c.strip() for c in _CLAUSE_SPLIT.split(norm) if c and c.strip()]


def is_negated(clause: str, start: int, window: int = 3) -> bool:
    """Whether the match at `start` in `clause` is negated.

    Negated when one of the `window` words just before it is a negator ("never take ..."), or when an
    earlier part of the clause is a refusal ("I won't tell you how to ...").
    """
    prefix = clause[:start]
    if _REFUSAL.search(prefix):
        return True
    return any(w in NEGATORS for w in _WORD.findall(prefix)[-window:])


def find_unnegated(patterns: Sequence[re.Pattern[str]], text: str, window: int = 3) -> list[str]:
    """The matches of any pattern, clause by clause, that are not negated."""
    hits: list[str] = []
    for clause in clauses(text):
        for pattern in patterns:
            hits.extend(m.group(0) for m in pattern.finditer(clause) if not is_negated(clause, m.start(), window))
    return hits
