"""Unit tests of the GRPO rewards: each reward ranks good completions above bad ones."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.rewards import (
    FIT_TABLE,
    REWARD_NAMES,
    MissingResourceError,
    RewardResources,
    UnknownRewardError,
    build_reward_functions,
    classify_strategies,
    score_all,
    split_completion,
)
from models.safety import SafetyAssessor
from models.safety.probes import LinearProbe
from models.schema import STAGES, STRATEGIES

TRL_EXTRAS = {"trainer_state": object(), "completion_ids": [[1, 2]], "log_metric": print, "prompt_id": ["x"]}


class BagOfWordsEmbedder:
    """A tiny deterministic embedder: hashed bag of words. Counts the texts it encodes."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, sentences: list[str], normalize_embeddings: bool = True, **kwargs) -> np.ndarray:
        self.encoded.extend(sentences)
        out = np.zeros((len(sentences), 64), dtype=np.float32)
        for i, s in enumerate(sentences):
            for w in s.lower().split():
                out[i, sum(map(ord, w)) % 64] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def bag_of_words_resources(**kwargs) -> RewardResources:
    """Resources on the bag-of-words embedder, with safety probes of its width (they carry no meaning)."""
    embedder = BagOfWordsEmbedder()
    zero = LinearProbe(np.zeros(64, dtype=np.float32), 0.0)
    assessor = SafetyAssessor(lambda texts: embedder.encode(list(texts)), probes={"risk": zero, "safe_reply": zero})
    return RewardResources(embedder=embedder, safety_assessor=assessor, **kwargs)


class FakeScorer:
    """Scores a reply by its number of 'sorry' words minus 1; records what it was asked to score."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def score(self, contexts: list[str], replies: list[str]) -> list[float]:
        self.calls.append((list(contexts), list(replies)))
        return [r.lower().count("sorry") * 2.0 - 1.0 for r in replies]


def reward(name: str, resources: RewardResources | None = None):
    (fn,), _ = build_reward_functions({name: 1.0}, resources or RewardResources(embedder=BagOfWordsEmbedder()))
    return fn


def run(fn, completions: list[str], **columns) -> list[float]:
    n = len(completions)
    cols = {k: (v if isinstance(v, list) and len(v) == n else [v] * n) for k, v in columns.items()}
    scores = fn(prompts=["prompt"] * n, completions=completions, **cols, **TRL_EXTRAS)
    assert len(scores) == n and all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)
    return scores


# --- split_completion and format ------------------------------------------------------------------


def test_split_completion_accepts_prefilled_and_full_forms() -> None:
    assert split_completion("They feel alone.</think>\nI'm here.") == ("They feel alone.", "I'm here.", True)
    assert split_completion("<think>They feel alone.</think>I'm here.") == ("They feel alone.", "I'm here.", True)
    assert split_completion("still thinking about it") == ("still thinking about it", "", False)
    assert split_completion("a</think>b</think>c")[2] is False
    assert split_completion("a</think>b<think>c")[2] is False


def test_format_grades_structure() -> None:
    fn = reward("format")
    good = "They lost a job and feel ashamed.</think>\nThat sounds really hard. What happened?"
    short_think = "Job.</think>\nThat sounds really hard. What happened?"
    no_reply = "They lost a job and feel ashamed.</think>\n"
    unclosed = "They lost a job and feel ashamed, so I should"
    doubled = "They lost a job.</think>That sounds hard for you.</think>More text here."
    scores = run(fn, [good, short_think, no_reply, unclosed, "", doubled])
    assert scores[0] == 1.0
    assert scores[1] == 0.75
    assert scores[2] == 0.5
    assert scores[3] == 0.25
    assert scores[4] == 0.0
    assert scores[5] == 0.1  # a loop of tags scores below unfinished reasoning
    assert run(fn, ["<think>" + good])[0] == 1.0


# --- grounding ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> RewardResources:
    return RewardResources()  # the real MiniLM, loaded on first use


GUIDANCE = [
    "When a seeker feels lonely after moving to a new city, suggest small regular social routines such as "
    "joining a club or a class, and validate how hard starting over can be.",
    "Ask open questions to learn what the seeker has already tried.",
]


def test_grounding_rewards_semantic_use_of_guidance(minilm: RewardResources) -> None:
    fn = reward("grounding", minilm)
    reply = "</think>\nThat sounds lonely. Have you thought about joining a group nearby?"
    paraphrase = "Starting over somewhere new is isolating; I could recommend a weekly activity like a local society"
    cooking = "A good risotto needs the rice toasted first and warm broth added a ladle at a time"
    scores = run(fn, [paraphrase + reply, cooking + reply, reply], guidance=[GUIDANCE] * 3)
    assert scores[0] > 0.5
    assert scores[1] < 0.2
    assert scores[0] > scores[1] + 0.3
    assert scores[2] == 0.0  # no reasoning


def test_grounding_without_guidance_is_zero_and_passages_are_cached() -> None:
    embedder = BagOfWordsEmbedder()
    fn = reward("grounding", RewardResources(embedder=embedder))
    assert run(fn, ["some reasoning here</think>reply words here"], guidance=[[]]) == [0.0]
    run(fn, ["join a club</think>ok then", "ask questions</think>ok then"], guidance=[GUIDANCE] * 2)
    run(fn, ["join a club again</think>ok then"], guidance=[GUIDANCE])
    assert sum(text in GUIDANCE for text in embedder.encoded) == len(GUIDANCE)


# --- strategy_fit -------------------------------------------------------------------------------

QUESTION = "</think>\nWhat has been the hardest part of this for you?"
ADVICE = "</think>\nYou could try writing down your worries each evening; maybe that helps you sleep."


def test_strategy_fit_prefers_questions_in_exploration_and_advice_in_action() -> None:
    fn = reward("strategy_fit")
    q_expl, a_expl = run(fn, ["think" + QUESTION, "think" + ADVICE], stage="Exploration")
    q_act, a_act = run(fn, ["think" + QUESTION, "think" + ADVICE], stage="Action")
    assert q_expl > a_expl + 0.3
    assert a_act > q_act + 0.2
    reflect = "think</think>\nIt sounds like you're feeling really hurt and alone."
    assert run(fn, [reflect], stage="Comforting")[0] > run(fn, ["think" + ADVICE], stage="Comforting")[0]


def test_strategy_fit_bonus_for_guidance_strategies() -> None:
    fn = reward("strategy_fit")
    match, other = run(
        fn, ["t" + ADVICE] * 2, stage="Action", guidance_strategies=[["Providing Suggestions"], ["Question"]]
    )
    assert match > other
    assert run(fn, ["t</think>"], stage="Action") == [0.0]


def test_strategy_rules_and_fit_table_cover_the_vocabularies() -> None:
    assert set(FIT_TABLE) == set(STAGES)
    assert all(set(row) == set(STRATEGIES) and all(0 <= v <= 1 for v in row.values()) for row in FIT_TABLE.values())
    assert classify_strategies("It sounds like you feel betrayed.") == ["Reflection of feelings"]
    assert classify_strategies("Okay.") == ["Others"]


# --- repetition ---------------------------------------------------------------------------------

SEEKER = "I lost my job last week and I can't stop worrying about how I will pay the rent."


def test_repetition_penalises_loops_and_parroting() -> None:
    fn = reward("repetition")
    fresh = "t</think>\nThat must be so stressful. Have you been able to look at any support for the rent?"
    loop = "t</think>\n" + "I am here for you. " * 8
    parrot = "t</think>\n" + SEEKER
    restate = "t</think>\nSo losing your job has left you anxious about rent. What feels most urgent?"
    scores = run(fn, [fresh, loop, parrot, restate, "t</think>"], seeker_text=SEEKER)
    assert scores[0] == 1.0
    assert scores[1] < 0.2
    assert scores[2] < 0.2
    assert scores[3] > 0.8
    assert scores[4] == 0.0


# --- preference ---------------------------------------------------------------------------------


def test_preference_scores_the_reply_only_with_sigmoid() -> None:
    scorer = FakeScorer()
    fn = reward("preference", RewardResources(embedder=BagOfWordsEmbedder(), preference_scorer=scorer))
    completions = ["SECRET reasoning sorry sorry</think>\nI'm sorry.", "SECRET</think>\nOkay.", "SECRET no reply"]
    scores = run(fn, completions, context_text="Seeker: I feel low.")
    ((contexts, replies),) = scorer.calls
    assert replies == ["I'm sorry.", "Okay."]  # no reasoning, and the empty reply is not scored
    assert contexts == ["Seeker: I feel low."] * 2
    assert scores[0] == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert scores[1] == pytest.approx(1 / (1 + math.exp(1.0)))
    assert scores[2] == 0.0


def test_preference_without_scorer_is_a_clear_error() -> None:
    with pytest.raises(MissingResourceError, match="preference scorer"):
        build_reward_functions({"preference": 1.0}, RewardResources(embedder=BagOfWordsEmbedder()))


# --- registry and score_all ---------------------------------------------------------------------


def test_registry_names_weights_and_unknown_names() -> None:
    assert REWARD_NAMES == ("format", "grounding", "strategy_fit", "preference", "safety", "repetition")
    resources = RewardResources(embedder=BagOfWordsEmbedder(), preference_scorer=FakeScorer())
    fns, weights = build_reward_functions({"safety": 2.0, "format": 0.5}, resources)
    assert [f.__name__ for f in fns] == ["safety", "format"]
    assert weights == [2.0, 0.5]
    with pytest.raises(UnknownRewardError) as err:
        build_reward_functions({"format": 1.0, "kindness": 1.0, "fluency": 1.0}, resources)
    assert isinstance(err.value, ValueError)
    message = str(err.value)
    assert "'kindness'" in message and "'fluency'" in message
    assert all(name in message for name in REWARD_NAMES)
    with pytest.raises(ValueError, match="finite number"):
        build_reward_functions({"format": -1.0}, resources)


def test_every_reward_handles_a_trl_batch() -> None:
    resources = bag_of_words_resources(preference_scorer=FakeScorer())
    fns, _ = build_reward_functions({name: 1.0 for name in REWARD_NAMES}, resources)
    completions = ["They feel alone.</think>\nI'm sorry, that sounds lonely. What happened?", "", "no close tag"]
    for fn in fns:
        run(
            fn,
            completions,
            guidance=[GUIDANCE] * 3,
            guidance_strategies=["Question"],
            stage="Exploration",
            seeker_text=SEEKER,
            context_text="Seeker: " + SEEKER,
        )


def test_score_all_returns_every_reward_and_weighted_total() -> None:
    resources = bag_of_words_resources(preference_scorer=FakeScorer())
    weights = {"format": 1.0, "safety": 3.0}
    result = score_all(
        "They feel ashamed about the job.</think>\nI'm sorry, that sounds hard. What happened next?",
        guidance=GUIDANCE,
        guidance_strategies=["Question"],
        stage="Exploration",
        seeker_text=SEEKER,
        context_text="Seeker: " + SEEKER,
        weights=weights,
        resources=resources,
    )
    assert set(result) == {*REWARD_NAMES, "total"}
    assert all(0.0 <= v <= 1.0 for v in result.values())
    assert result["total"] == pytest.approx((result["format"] + 3 * result["safety"]) / 4)


def test_importing_rewards_stays_light() -> None:
    heavy = "{'torch', 'transformers', 'trl', 'sentence_transformers'}"
    code = f"import sys, models.rewards; print(sorted({heavy} & set(sys.modules)))"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[]"
