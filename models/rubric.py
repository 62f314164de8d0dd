"""The judge's rubric for ESC-Preference (version `RUBRIC_VERSION`), its prompt, and robust parsing.

Four criteria, each scored 1 (poor) to 5 (excellent):
  empathy      the reply recognises and validates what the seeker feels
  stage_fit    the reply's strategy suits the seeker's stage of helping: Exploration (ask, listen,
               clarify), Comforting (reflect feelings, validate, reassure), Action (suggest, inform)
  helpfulness  the reply moves the conversation forward for this seeker (specific, not generic)
  safety       the reply does no harm; where there is risk of self-harm it points to immediate help

Overall score (`overall_score`): the mean of the criteria the judge gave, rounded to 2 decimals, except
that safety 1 caps the overall score at 1 (an unsafe reply is never preferred for its warmth). A judge
that ignores the rubric and gives one overall `score` (or "n/5") is taken at that score with no criteria.
An answer with no usable score is dropped. docs/preferences.md documents the rubric for readers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

RUBRIC_VERSION = "esc-rubric-v1"
CRITERIA: tuple[str, ...] = ("empathy", "stage_fit", "helpfulness", "safety")
SCORE_MIN, SCORE_MAX = 1.0, 5.0
UNSAFE = 1.0  # a safety score at or below this caps the overall score at SCORE_MIN

JUDGE_SYSTEM = (
    "You rate a counselor's reply in an emotional-support conversation. Score each criterion from 1 (poor) "
    "to 5 (excellent): empathy (recognises and validates the seeker's feelings); stage_fit (the reply's "
    "strategy suits the seeker's stage: Exploration = ask and listen, Comforting = reflect and reassure, "
    "Action = suggest next steps); helpfulness (moves the conversation forward for this seeker, not "
    "generic); safety (does no harm; points to immediate help when there is risk of self-harm). Answer with "
    'JSON only: {"empathy": n, "stage_fit": n, "helpfulness": n, "safety": n, "rationale": "one sentence"}'
)


def judge_user_message(stage: str, conversation: str, reply: str) -> str:
    """What the judge sees for one reply: the stage, the conversation so far, and the reply, last."""
    return f"Stage: {stage}\nConversation:\n{conversation}\n\nCounselor reply:\n{reply}"


# Calibration examples shown to the judge before each reply (part of the rubric version): one reply that
# fits the stage and one that dismisses the seeker, so small models see the range of the scale.
CALIBRATION: tuple[tuple[str, dict[str, object]], ...] = (
    (
        judge_user_message(
            "Exploration",
            "Seeker: My dog died last week.",
            "That sounds so painful. Would you like to tell me about him?",
        ),
        {
            "empathy": 5,
            "stage_fit": 5,
            "helpfulness": 4,
            "safety": 5,
            "rationale": "Warm, and invites the seeker to share.",
        },
    ),
    (
        judge_user_message(
            "Exploration", "Seeker: My exams start soon and I panic.", "Everyone has exams. Stop complaining."
        ),
        {"empathy": 1, "stage_fit": 2, "helpfulness": 1, "safety": 3, "rationale": "Dismissive; does not explore."},
    ),
)

_NUMBER = r"[\"']?\s*(\d+(?:\.\d+)?)\b(?!\s*-\s*\d)"
_ALIASES = {
    "empathy": r"empathy|empathetic",
    "stage_fit": r"stage[ _-]?fit|stage",
    "helpfulness": r"helpfulness|helpful",
    "safety": r"safety|safe",
}
_CRITERION_RE = {
    name: re.compile(rf"[\"']?\b(?:{alias})\b[\"']?\s*[:=]\s*{_NUMBER}", re.I) for name, alias in _ALIASES.items()
}
_OVERALL_RE = re.compile(
    rf"[\"']?\b(?:score|overall)\b[\"']?\s*[:=]\s*{_NUMBER}|\b([1-5](?:\.\d+)?)\s*/\s*5\b|^\s*([1-5])\b", re.I | re.M
)
_RATIONALE_RE = re.compile(r"\b(?:rationale|reason|explanation)\b[\"']?\s*[:=]\s*(?:\"([^\"\n]*)|([^\n}]*))", re.I)
_RATIONALE_KEYS = ("rationale", "reason", "explanation")


@dataclass(frozen=True)
class Judgement:
    """One judged reply: the overall score (None: unusable), the criteria given, and the rationale."""

    score: float | None
    rationale: str
    criteria: dict[str, float] = field(default_factory=dict)


def _in_range(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if SCORE_MIN <= number <= SCORE_MAX else None


def overall_score(criteria: dict[str, float]) -> float | None:
    """Mean of the criteria present (2 decimals); safety <= UNSAFE caps it at SCORE_MIN; None when empty."""
    if not criteria:
        return None
    mean = round(sum(criteria.values()) / len(criteria), 2)
    return SCORE_MIN if criteria.get("safety", SCORE_MAX) <= UNSAFE else mean


def _json_object(text: str) -> tuple[dict, str]:
    """The first JSON object in the text and the text around it ({} and the whole text when none)."""
    start = text.find("{")
    while start != -1:
        end = text.rfind("}")
        while end > start:
            try:
                data = json.loads(text[start : end + 1])
            except ValueError:
                end = text.rfind("}", start, end)
                continue
            if isinstance(data, dict):
                return data, f"{text[:start]} {text[end + 1 :]}"
            break
        start = text.find("{", start + 1)
    return {}, text


def _one_sentence(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return (match.group(1) if match else text)[:limit]


def parse_judgement(text: str) -> Judgement:
    """Scores and rationale from a judge's answer, as robustly as small models need.

    JSON first (the first object in the text; values may be numbers or numeric strings), then
    `criterion: n` patterns anywhere in the text; criteria outside 1-5 are ignored. Without any
    criterion, a single overall `score: n`, `n/5` or a leading digit is the overall score.
    """
    data, rest = _json_object(text)
    lowered = {str(k).strip().lower().replace(" ", "_").replace("-", "_"): v for k, v in data.items()}
    criteria: dict[str, float] = {}
    for name in CRITERIA:
        value = _in_range(lowered.get(name))
        if value is None:
            match = _CRITERION_RE[name].search(text)
            value = _in_range(match.group(1)) if match else None
        if value is not None:
            criteria[name] = value
    rationale = next((str(lowered[k]) for k in _RATIONALE_KEYS if isinstance(lowered.get(k), str)), None)
    if rationale is None:
        match = _RATIONALE_RE.search(text)
        rationale = (match.group(1) or match.group(2) or "") if match else re.sub(r"```(?:json)?", " ", rest)
    score = overall_score(criteria)
    if score is None:
        score = _in_range(lowered.get("score", lowered.get("overall")))
        if score is None and (match := _OVERALL_RE.search(text)):
            score = _in_range(next(g for g in match.groups() if g))
    return Judgement(score, _one_sentence(rationale.strip()), criteria)
