"""Record formats shared by every layer: the strategy and stage vocabularies and dataset names."""

from __future__ import annotations

# The eight ESConv support strategies, spelled exactly as in ESConv.
STRATEGIES: tuple[str, ...] = (
    "Question",
    "Restatement or Paraphrasing",
    "Reflection of feelings",
    "Self-disclosure",
    "Affirmation and Reassurance",
    "Providing Suggestions",
    "Information",
    "Others",
)

# The three stages of helping (Hill's model, as used by ESConv), plus "any" for stage-free guidance.
STAGES: tuple[str, ...] = ("Exploration", "Comforting", "Action")
KNOWLEDGE_STAGES: tuple[str, ...] = (*STAGES, "any")

SPEAKERS: tuple[str, ...] = ("seeker", "supporter")
SPLITS: tuple[str, ...] = ("train", "eval")

DATASETS: tuple[str, ...] = ("knowledge", "dialogues", "preferences", "ratings")
# Datasets a project may lack: `ratings` arrives with `escrag data import epitome|diasafety`.
OPTIONAL_DATASETS: tuple[str, ...] = ("ratings",)

# Human-rated replies (models/ratings.py): where they come from, their splits and the highest level of
# each source's labels (EPITOME: 0/1/2 per mechanism; DiaSafety: 1 = unsafe).
RATING_SOURCES: dict[str, int] = {"epitome": 2, "diasafety": 1}
RATING_SPLITS: tuple[str, ...] = ("train", "eval", "test")
EPITOME_MECHANISMS: tuple[str, ...] = ("emotional_reactions", "interpretations", "explorations")

# The GRPO rewards, by name (models/rewards/registry.py maps each to its function). They live here, not
# with the functions, so reading params.yaml never imports the rewards (nor makes every stage depend on them).
REWARD_NAMES: tuple[str, ...] = ("format", "grounding", "strategy_fit", "preference", "safety", "repetition")

# What an evaluation measures of a model's replies (models/judging.py, models/esconv_metrics.py). The
# per-reply metrics are each in [0, 1], higher better, so a weighted composite of them means the same
# for every model; none of them is a training reward (tests/unit/test_evaluators.py).
STRATEGY_MATCH = "strategy_match"  # the evaluator's strategy for the reply equals the gold supporter's
RISK_ATTENDED = "risk_attended"  # 1 − P(the reply ignores the seeker's risk)
EMPATHY_METRICS: tuple[str, ...] = tuple(f"empathy_{m}" for m in EPITOME_MECHANISMS)
REPLY_METRICS: tuple[str, ...] = (STRATEGY_MATCH, *EMPATHY_METRICS, RISK_ATTENDED)
ESCONV_METRICS: tuple[str, ...] = ("bleu_2", "bleu_4", "rouge_l", "distinct_1", "distinct_2", "length")
WIN_RATE = "win_rate"  # the candidate's composite win-rate against an opponent (models/comparison.py)
INDEPENDENT_METRICS: tuple[str, ...] = (WIN_RATE, *REPLY_METRICS, *ESCONV_METRICS)
