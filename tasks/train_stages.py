"""Training stages: the preference reward model, the cold-start SFT and GRPO."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from models.compute import gpu_peak_memory, is_main_process, process_rank
from models.records import dialogues_of_split, load_records
from tasks.dvc_ops import data_md5, lock_dep_md5, lock_out_md5
from tasks.project import Project
from tasks.tracking import REWARD_MODEL, log_jsonl_dataset, tracked_run

logger = logging.getLogger(__name__)


def dataset_digest(project: Project, dataset: str) -> str:
    """The dataset's DVC md5 as the validate stage saw it; else (an optional dataset, which validate does not
    name) the md5 of the whole data version."""
    found = lock_dep_md5(project.root, "validate").get(f"data/{dataset}")
    return found or f"data:{data_md5(project.root) or 'unversioned'}"


def grpo_checkpoints(project: Project) -> Path:
    """Where GRPO keeps its resumable state: one folder per set of inputs (the SFT policy, reward model,
    index and dialogues as dvc.lock records them, the grpo params and seed), so a re-run resumes only the
    very training it continues. Folders of other inputs are stale and removed."""
    inputs = {
        "outs": {stage: lock_out_md5(project.root, stage) for stage in ("sft", "reward_model", "index")},
        "dialogues": dataset_digest(project, "dialogues"),
        "grpo": project.params.grpo.model_dump(exclude={"checkpoint_steps"}),
        "seed": project.params.seed,
    }
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    root = project.state / "checkpoints"
    for stale in root.glob("grpo-*") if root.is_dir() else []:
        if stale.name != f"grpo-{key}":
            shutil.rmtree(stale, ignore_errors=True)
    return root / f"grpo-{key}"


def write_json(path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def build_split_examples(project: Project, split: str, max_examples: int) -> list[dict[str, Any]]:
    """Prompts (with retrieved guidance) for the dialogues of one split."""
    from transformers import AutoTokenizer

    from models.training_data import build_examples
    from tasks.guidance import open_retriever

    params = project.params
    retriever = open_retriever(project)
    tokenizer = AutoTokenizer.from_pretrained(str(project.artifact("base_model")))
    return build_examples(
        dialogues_of_split(project.data, split),
        lambda query, k: retriever.search(query, k=k),
        tokenizer,
        k=params.retrieval.k,
        max_examples=max_examples,
        seed=params.seed,
    )


def reward_model(project: Project) -> dict:
    import mlflow

    from models.embedder import embedder_path
    from models.reward_training import rehearsal_pairs, selection_from_metrics, train_reward_model
    from tasks.reward_registry import register_reward_model

    settings = project.params.reward_model
    pairs = load_records(project.data, "preferences")
    dialogues = load_records(project.data, "dialogues")
    rehearsal = rehearsal_pairs(dialogues, pairs, settings.rehearsal_per_dialogue, project.params.seed)
    train = functools.partial(
        train_reward_model,
        pairs + rehearsal,
        encoder_path=embedder_path(),
        output_dir=project.artifact("reward_model"),
        epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        batch_size=settings.batch_size,
        eval_fraction=settings.eval_fraction,
        seed=project.params.seed,
        max_length=settings.max_length,
        in_batch_weight=settings.in_batch_weight,
        interaction=settings.interaction,
        quality_head=settings.quality_head,
        compute=project.compute,
    )
    if not is_main_process():  # under `accelerate launch`: rank 0 alone logs, writes and registers
        return {"rank": process_rank(), **train()}
    with tracked_run(project, "reward_model") as run:
        log_jsonl_dataset(
            project.data / "preferences", pairs, "preferences", dataset_digest(project, "preferences"), "training"
        )
        mlflow.log_params({f"reward_model.{k}": v for k, v in settings.model_dump().items()})
        mlflow.log_params(project.compute.as_params())
        metrics = {**train(), "n_rehearsal_pairs": len(rehearsal)}
        mlflow.log_metrics({k: float(v) for k, v in metrics.items()})
        selected, reason = selection_from_metrics(metrics)
        mlflow.set_tags({"reward_model.selected": selected, "reward_model.selection_reason": reason})
        registered = register_reward_model(project, metrics)
    report = {
        **metrics,
        "selected": selected,
        "selection_reason": reason,
        "mlflow_run_id": run.info.run_id,
        "registered_version": registered.version,
    }
    write_json(project.reports / "reward_model.json", report)
    return report


def sft(project: Project) -> dict:
    import mlflow

    from models.policy_training import train_cold_start

    settings = project.params.sft
    examples = build_split_examples(project, "train", project.params.grpo.max_prompts)
    train = functools.partial(
        train_cold_start,
        project.artifact("base_model"),
        examples,
        project.artifact("sft"),
        steps=settings.steps,
        learning_rate=settings.learning_rate,
        seed=project.params.seed,
        compute=project.compute,
    )
    if not is_main_process():
        train()
        return {"rank": process_rank()}
    with tracked_run(project, "sft"):
        mlflow.log_params({f"sft.{k}": v for k, v in settings.model_dump().items()})
        mlflow.log_params(project.compute.as_params())
        losses = [row["loss"] for row in train() if "loss" in row]
        mlflow.log_metrics({"sft.first_loss": losses[0], "sft.last_loss": losses[-1]})
    return {"examples": len(examples), "first_loss": losses[0], "last_loss": losses[-1]}


def grpo(project: Project) -> dict:
    import mlflow

    from models.policy_training import GrpoSettings, reward_curve, train_grpo
    from models.rewards import RewardResources, build_reward_functions
    from tasks.reward_registry import preference_scorer, reward_model_version

    params, compute = project.params, project.compute
    settings = params.grpo
    # The reward encoders run on the policy's device, batched (models.compute).
    resources = RewardResources(preference_scorer=preference_scorer(project), compute=compute)
    funcs, weights = build_reward_functions(settings.rewards, resources)
    checkpoints = grpo_checkpoints(project)
    train = functools.partial(
        train_grpo,
        project.artifact("sft"),
        build_split_examples(project, "train", settings.max_prompts),
        funcs,
        weights,
        GrpoSettings(**settings.model_dump(exclude={"rewards", "max_prompts"}), seed=params.seed),
        project.artifact("policy"),
        compute=compute,
        checkpoints=checkpoints,
    )
    if not is_main_process():
        _, digest = train(report_to=[])
        return {"rank": process_rank(), "weights_sha256": digest}
    dialogues = dialogues_of_split(project.data, "train")
    with tracked_run(project, "grpo") as run:
        log_jsonl_dataset(
            project.data / "dialogues", dialogues, "dialogues-train", dataset_digest(project, "dialogues"), "training"
        )
        mlflow.log_params({f"grpo.{k}": v for k, v in settings.model_dump().items() if k != "rewards"})
        mlflow.log_params({f"grpo.reward.{k}": v for k, v in settings.rewards.items()})
        mlflow.log_params(compute.as_params())
        mlflow.set_tags({"reward_model.name": REWARD_MODEL, "reward_model.version": reward_model_version(project)})
        history, digest = train(report_to=["mlflow"])
        mlflow.set_tag("policy.weights_sha256", digest)
        mlflow.log_metric("grpo.peak_gpu_memory_bytes", gpu_peak_memory())
    curve = reward_curve(history)
    summary = {"mlflow_run_id": run.info.run_id, "steps": len(curve), "weights_sha256": digest}
    write_json(project.artifact("grpo", "run.json"), summary)
    write_json(project.reports / "grpo_reward_curve.json", {"reward": curve})
    shutil.rmtree(checkpoints, ignore_errors=True)  # only now: a run that failed to log resumes at its last step
    return summary
