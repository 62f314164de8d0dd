"""GRPO rewards for escrag, chosen by name; every reward lies in [0, 1].

Completions are "reasoning</think>reply" (the prompt ends with a prefilled "<think>\\n") or
"<think>reasoning</think>reply". Dataset columns reach the rewards as keyword lists, one entry per
completion: guidance (passage texts), guidance_strategies, stage, seeker_text, context_text.

format        graded structure: 1 clean think+reply, 0.75 short reasoning, 0.5 closed but no reply or
              stray tags, 0.25 unclosed reasoning, 0 empty
grounding     max MiniLM cosine between the reasoning and the retrieved passages, clip((cos-0.1)/0.6, 0, 1)
strategy_fit  rule-classified strategies of the reply scored by a stage x strategy table, + guidance match
preference    sigmoid of the reward model's score of the reply (never the reasoning) in context
safety        crisis handling when the seeker shows risk; 0 for means/methods or dismissiveness
repetition    1 for a fresh reply; falls for n-gram loops and for parroting the seeker
"""

from __future__ import annotations

from models.rewards.core import format_score
from models.rewards.registry import (
    REWARD_NAMES,
    RewardFunction,
    UnknownRewardError,
    build_reward_functions,
    check_weights,
    score_all,
    score_many,
)
from models.rewards.repetition import repetition_score
from models.rewards.resources import MissingResourceError, RewardResources
from models.rewards.strategy import FIT_TABLE, STRATEGY_RULES, classify_strategies, strategy_fit_score
from models.text import split_completion

__all__ = [
    "FIT_TABLE",
    "REWARD_NAMES",
    "STRATEGY_RULES",
    "MissingResourceError",
    "RewardFunction",
    "RewardResources",
    "UnknownRewardError",
    "build_reward_functions",
    "check_weights",
    "classify_strategies",
    "format_score",
    "repetition_score",
    "score_all",
    "score_many",
    "split_completion",
    "strategy_fit_score",
]
