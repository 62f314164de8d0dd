"""The one registry of DVC stages: `dvc repro` (via `escrag stage NAME`) and Prefect both call these."""

from __future__ import annotations

from collections.abc import Callable

from tasks import build_stages, evaluate_stage, evaluators_stage, retrieval_stage, train_stages
from tasks.project import Project

StageFn = Callable[[Project], dict]

STAGES: dict[str, StageFn] = {
    "validate": build_stages.validate,
    "base_model": build_stages.base_model,
    "index": build_stages.index,
    "retrieval_eval": retrieval_stage.retrieval_eval,
    "evaluators": evaluators_stage.evaluators,
    "reward_model": train_stages.reward_model,
    "sft": train_stages.sft,
    "grpo": train_stages.grpo,
    "evaluate": evaluate_stage.evaluate,
}

# The order of a full run; dvc.yaml declares the same dependencies.
PIPELINE_ORDER: tuple[str, ...] = tuple(STAGES)
