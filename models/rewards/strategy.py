"""The 'strategy_fit' reward: which ESConv strategy the reply shows, and how well it fits the stage.

The reply's strategies come from a small, documented rule set (`STRATEGY_RULES`): each strategy has
phrase patterns, and a reply shows every strategy whose pattern it matches ("Others" when none does).
"""

from __future__ import annotations

import re

from models.rewards.batch import RewardBatch
from models.rewards.resources import RewardResources
from models.schema import STRATEGIES
from models.text import normalize

Q, RESTATE, REFLECT, SELF, AFFIRM, SUGGEST, INFO, OTHERS = STRATEGIES


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(parts))


_FEELINGS = (
    r"(?:sad|hurt|lonely|alone|angry|upset|frustrated|scared|afraid|anxious|worried|stressed|overwhelmed|"
    r"hopeless|helpless|lost|stuck|exhausted|tired|down|depressed|betrayed|ashamed|guilty|confused|"
    r"heartbroken|devastated|disappointed|nervous|trapped|worthless|rejected|insecure|empty|drained)"
)
_HARD = (
    r"(?:hard|difficult|tough|painful|frustrating|overwhelming|scary|lonely|upsetting|stressful|exhausting|"
    r"heartbreaking|awful|rough)"
)

# Rules, in STRATEGIES order. Patterns run on normalised (lower-case) reply text.
STRATEGY_RULES: dict[str, re.Pattern[str]] = {
    Q: _rx(
        r"\?",
        r"\bcan you (?:tell|share|say) (?:me )?more\b",
        r"\btell me (?:more|about)\b",
        r"\bi(?:'m| am) (?:wondering|curious)\b",
        r"\bwould you (?:like|mind) (?:to )?(?:share|talk|tell)",
    ),
    RESTATE: _rx(
        r"\bso you(?:'re| are|'ve| have| feel| said| mean|r)\b",
        r"\bif i (?:understand|hear) (?:you|correctly|right)",
        r"\bwhat i(?:'m| am) hearing\b",
        r"\bin other words\b",
        r"\byou (?:mentioned|said|told me)\b",
        r"\bsounds like you(?:'re| are)? (?:saying|telling)\b",
        r"\bso what you(?:'re| are) saying\b",
        r"\bit seems (?:like|that) you(?:'ve| have)\b",
    ),
    REFLECT: _rx(
        r"\b(?:it )?(?:sounds|seems|looks) (?:like|as if) you(?:'re| are)? (?:really |so |very |"
        rf"quite )?(?:feel(?:ing)?|{_FEELINGS})",
        rf"\byou (?:must|might|may) (?:be )?(?:feel(?:ing)? )?(?:really |so |very )?{_FEELINGS}",
        rf"\byou(?:'re| are) (?:feeling|really {_FEELINGS}|so {_FEELINGS})",
        rf"\byou feel(?:ing)? (?:so |really |very )?{_FEELINGS}",
        r"\b(?:that|this|it) (?:must|sounds|seems|would be|can be|is) (?:be )?(?:so |really |very |"
        rf"incredibly )?{_HARD}",
        r"\bi can (?:hear|sense|see|tell|imagine) (?:that |how )?(?:you|this|that|it)",
        r"\bhow (?:hard|painful|difficult) (?:this|that|it) (?:is|must be)",
    ),
    SELF: _rx(
        r"\bi(?:'ve| have) (?:been|gone|felt|had|experienced|struggled)\b",
        r"\bwhen i was\b",
        r"\bi (?:also|too) (?:felt|had|went|struggled|lost|was)\b",
        r"\bi remember (?:when|feeling|being)\b",
        r"\b(?:happened|happens) to me\b",
        r"\bi know (?:how|what) (?:it|that) feels?\b",
        r"\bi(?:'ve| have) been there\b",
        r"\bin my (?:own )?experience\b",
        r"\bi used to\b",
        r"\bfor me,? (?:it|what)\b",
        r"\bi went through\b",
    ),
    AFFIRM: _rx(
        r"\byou(?:'re| are) (?:not alone|doing (?:great|well|your best|the right)|strong|brave|so strong|worth)",
        r"\b(?:it's|it is|that's|that is) (?:completely |totally |perfectly )?(?:okay|ok|normal|understandable|"
        r"natural|valid) (?:to|that)",
        r"\b(?:that's|that is|it's|it is) (?:completely |totally |so )?(?:understandable|valid)\b",
        r"\byou (?:did|are doing|have done) (?:the right|great|well|your best|a great)",
        r"\bproud of you\b",
        r"\byou (?:can|will) (?:get|make it) through\b",
        r"\b(?:things|it) will (?:get better|be (?:okay|ok|alright))\b",
        r"\bi(?:'m| am) (?:here for you|glad you|so glad)\b",
        r"\byour feelings (?:are|make)\b",
        r"\b(?:don't|do not) be (?:too )?hard on yourself\b",
        r"\bnot your fault\b",
        r"\byou deserve\b",
        r"\bthank you for (?:sharing|telling|trusting|opening)\b",
        r"\bgood (?:for you|job|idea|step)\b",
        r"\bthat (?:takes|took) (?:courage|strength)\b",
    ),
    SUGGEST: _rx(
        r"\byou (?:could|might|can|may want to|should) (?:try|consider|start|talk|reach|think about|write|make|take|"
        r"go|ask|look|join|set|plan|spend|call|schedule|see)\b",
        r"\bmaybe (?:you|try|it|a|talking|writing|taking)\b",
        r"\bperhaps (?:you|try|it)\b",
        r"\bhave you (?:tried|considered|thought about)\b",
        r"\bi (?:would )?(?:suggest|recommend)\b",
        r"\bit (?:might|may|could|would) (?:help|be (?:helpful|worth|a good idea))\b",
        r"\bhow about\b",
        r"\bwhat if you\b",
        r"\btry (?:to|talking|writing|taking|going|making|reaching)\b",
        r"\bone (?:thing|option|idea|step) (?:you|that|is|could|might)\b",
        r"\b(?:a good|one) (?:idea|step|way) (?:is|would be|might be)\b",
        r"\bwhy not\b",
        r"\bconsider (?:talking|writing|taking|trying|reaching|asking|speaking)\b",
    ),
    INFO: _rx(
        r"\b(?:research|studies|evidence|experts?|science) (?:shows?|suggests?|says?|finds?)\b",
        r"\baccording to\b",
        r"\b(?:it's|it is) (?:very |quite )?(?:common|normal|typical) (?:for|to)\b",
        r"\bmany (?:people|students|parents|others)\b",
        r"\b(?:is|are) (?:a )?(?:common|normal|natural) (?:reaction|response|part)\b",
        r"\bthere are (?:resources|services|programs|groups|hotlines|apps|websites)\b",
        r"\b\d+ ?%",
        r"\b(?:therapists?|counsel(?:l)?ors?|doctors?) (?:can|often|are trained)\b",
        r"\bstatistic",
    ),
}

# How well each strategy fits each stage (Hill's helping model as used by ESConv), in [0, 1].
FIT_TABLE: dict[str, dict[str, float]] = {
    "Exploration": {Q: 1.0, RESTATE: 0.9, REFLECT: 0.9, AFFIRM: 0.6, SELF: 0.4, INFO: 0.3, SUGGEST: 0.2, OTHERS: 0.3},
    "Comforting": {REFLECT: 1.0, AFFIRM: 1.0, SELF: 0.8, RESTATE: 0.7, Q: 0.6, INFO: 0.4, SUGGEST: 0.4, OTHERS: 0.3},
    "Action": {SUGGEST: 1.0, INFO: 0.9, AFFIRM: 0.7, Q: 0.6, SELF: 0.5, REFLECT: 0.5, RESTATE: 0.4, OTHERS: 0.3},
}
# A stage not in the table (missing, or "any") uses the mean over the three stages.
_ANY = {s: sum(row[s] for row in FIT_TABLE.values()) / len(FIT_TABLE) for s in STRATEGIES}
# The score blends the best-fitting strategy shown with the mean over all strategies shown, so tacking a
# question mark onto advice does not buy a full score in Exploration.
MAX_WEIGHT = 0.6
# Share of the score kept for matching one of the retrieved passages' strategies (when there are any).
GUIDANCE_BONUS = 0.15


def classify_strategies(reply: str) -> list[str]:
    """The ESConv strategies a reply shows, in STRATEGIES order; ["Others"] when no rule matches."""
    text = normalize(reply)
    if not text.strip():
        return []
    found = [name for name, pattern in STRATEGY_RULES.items() if pattern.search(text)]
    return found or [OTHERS]


def _canonical(name: str) -> str:
    low = name.strip().lower()
    for s in STRATEGIES:
        if s.lower() == low or s.lower().split()[0] == low.split(" ")[0]:
            return s
    return name.strip()


def strategy_fit_score(reply: str, stage: str, guidance_strategies: list[str] | None = None) -> float:
    """Stage fit of the strategies the reply shows, with a bonus for matching the guidance's strategies."""
    shown = classify_strategies(reply)
    if not shown:
        return 0.0
    row = FIT_TABLE.get(stage.strip().capitalize() if stage else "", _ANY)
    fits = [row[s] for s in shown]
    fit = MAX_WEIGHT * max(fits) + (1 - MAX_WEIGHT) * sum(fits) / len(fits)
    wanted = {_canonical(s) for s in guidance_strategies or [] if s and s.strip()}
    if not wanted:
        return float(fit)
    return float((1 - GUIDANCE_BONUS) * fit + GUIDANCE_BONUS * bool(wanted & set(shown)))


def strategy_fit_rewards(batch: RewardBatch, resources: RewardResources) -> list[float]:
    return [
        strategy_fit_score(p.reply, st, gs)
        for p, st, gs in zip(batch.parsed, batch.stage, batch.guidance_strategies, strict=True)
    ]
