"""Policy training with TRL: a short cold-start SFT, then GRPO on the named rewards.

The cold start exists because the 135M base policy practically never closes `</think>` on its own,
so GRPO would see no format signal at all (DeepSeek-R1 used a cold start for the same reason).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.compute import Compute, is_main_process, process_rank
from models.training_data import cold_start_completion

logger = logging.getLogger(__name__)

REWARD_COLUMNS = ("guidance", "guidance_strategies", "stage", "seeker_text", "context_text")


@dataclass(frozen=True)
class GrpoSettings:
    max_steps: int
    learning_rate: float
    beta: float
    num_generations: int
    prompts_per_step: int
    max_completion_length: int
    temperature: float
    seed: int
    micro_batch_size: int = 0  # completions per forward/backward; 0: the whole step at once
    checkpoint_steps: int = 0  # resumable state every N steps in the checkpoint folder; 0: none

    @property
    def completions_per_step(self) -> int:
        return self.num_generations * self.prompts_per_step

    @property
    def micro_batch(self) -> int:
        return self.micro_batch_size or self.completions_per_step


def largest_weight_difference(a: Path, b: Path) -> float:
    """The largest absolute difference between two saved models' weights (safetensors, same names);
    infinity when they share no tensor or a shared tensor changed shape."""
    from safetensors.torch import load_file

    first, second = ({k: v for f in sorted(Path(d).glob("*.safetensors")) for k, v in load_file(f).items()}
                     for d in (a, b))  # fmt: skip
    shared = sorted(set(first) & set(second))
    if not shared or any(first[k].shape != second[k].shape for k in shared):
        return float("inf")
    return max(float((first[k].float() - second[k].float()).abs().max()) for k in shared)


def weights_digest(model: Any) -> str:
    """sha256 over the model's parameters in name order: the same on every rank after DDP, and after a reload."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def _finish(trainer, tokenizer, out_dir: Path) -> str:
    """Log this rank's final weights digest; rank 0 alone writes the model. Returns the digest."""
    digest = weights_digest(trainer.model)
    logger.info("rank %d: final weights sha256 %s", process_rank(), digest)
    if is_main_process():
        _save_atomically(trainer, tokenizer, out_dir)
    return digest


def _save_atomically(trainer, tokenizer, out_dir: Path) -> None:
    """Write beside `out_dir`, then swap it in: a save cut short (a full disk) leaves the old folder or none."""
    staging = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        trainer.model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # free what it took, for the re-run
        raise
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)


def train_cold_start(
    model_dir: Path,
    examples: Sequence[dict[str, Any]],
    out_dir: Path,
    *,
    steps: int,
    learning_rate: float,
    seed: int,
    compute: Compute,
) -> list[dict[str, Any]]:
    """SFT on gold replies with templated reasoning; loss on the completion only."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from models.base_model import load_policy

    model, tokenizer = load_policy(model_dir)
    rows = [{"prompt": e["prompt"], "completion": cold_start_completion(e)} for e in examples]
    config = SFTConfig(
        output_dir=str(out_dir.with_name(out_dir.name + ".trainer")),
        max_steps=steps,
        per_device_train_batch_size=4,
        learning_rate=learning_rate,
        **compute.trainer_args(),
        gradient_checkpointing=False,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        seed=seed,
        max_length=768,
    )
    trainer = SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    trainer.train()
    _finish(trainer, tokenizer, out_dir)
    return trainer.state.log_history


def last_checkpoint(checkpoints: Path) -> Path | None:
    """The newest complete `checkpoint-N` folder the trainer wrote. It writes trainer_state.json last, so a
    save cut short (a kill, a full disk) has none, or one that does not parse or names another step."""
    found = [p for p in checkpoints.glob("checkpoint-*") if _is_complete(p)] if checkpoints.is_dir() else []
    return max(found, key=checkpoint_step, default=None)


def _is_complete(folder: Path) -> bool:
    try:
        state = json.loads((folder / "trainer_state.json").read_text())
        return state.get("global_step") == checkpoint_step(folder)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def _disk_full_named(folder: Path, needed: int) -> Iterator[None]:
    """torch.save reports a full disk as a bare stream error ("unexpected pos"): name it, as ENOSPC, when the
    checkpoint folder has less room left than one more copy of the weights."""
    try:
        yield
    except RuntimeError as exc:
        free = shutil.disk_usage(folder).free if folder.exists() else needed
        if free < needed:
            raise OSError(errno.ENOSPC, f"No space left on device: {free} bytes free in {folder}") from exc
        raise


def checkpoint_step(folder: Path) -> int:
    """The optimizer step a `checkpoint-N` folder holds: N."""
    return int(folder.name.rsplit("-", 1)[1])


def train_grpo(
    model_dir: Path,
    examples: Sequence[dict[str, Any]],
    reward_funcs: list[Callable[..., list[float]]],
    reward_weights: list[float],
    settings: GrpoSettings,
    out_dir: Path,
    report_to: list[str],
    compute: Compute,
    checkpoints: Path,
    callbacks: Sequence[Any] = (),
) -> tuple[list[dict[str, Any]], str]:
    """GRPO from `model_dir`; rank 0 writes the policy to `out_dir`.

    Every `settings.checkpoint_steps` steps the trainer saves its whole state in `checkpoints`; a run that
    finds a checkpoint there resumes from it (the caller keys the folder by the run's inputs, and removes it
    once the run is recorded: the trainer also saves at the last step, so a run lost after training resumes
    there instead of at step 0). Returns the trainer's log history and the sha256 of the
    final weights (`weights_digest`).
    """
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from models.base_model import load_policy

    model, tokenizer = load_policy(model_dir)
    columns = ("prompt", *REWARD_COLUMNS)
    dataset = Dataset.from_list([{c: e[c] for c in columns} for e in examples])
    config = GRPOConfig(
        output_dir=str(checkpoints),
        max_steps=settings.max_steps,
        learning_rate=settings.learning_rate,
        beta=settings.beta,
        num_generations=settings.num_generations,
        per_device_train_batch_size=settings.micro_batch,
        # One generation batch (the whole step) per optimizer step, in micro-batches: TRL's
        # steps_per_generation follows gradient_accumulation_steps.
        gradient_accumulation_steps=settings.completions_per_step // settings.micro_batch,
        max_completion_length=settings.max_completion_length,
        temperature=settings.temperature,
        reward_weights=reward_weights,
        **compute.trainer_args(),  # bf16 autocast only where compute says so: it is ~2x slower on these CPUs
        gradient_checkpointing=False,  # a 135M model fits; recomputation costs ~30% per step on CPU
        report_to=report_to,
        logging_steps=1,
        save_strategy="steps" if settings.checkpoint_steps else "no",
        save_steps=settings.checkpoint_steps or 1,
        save_total_limit=1,  # the latest state is all a resume needs
        seed=settings.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )
    resume = last_checkpoint(checkpoints)
    if resume is not None:
        logger.info("GRPO resumes from %s (step %d of %d)", resume.name, checkpoint_step(resume), settings.max_steps)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    with _disk_full_named(checkpoints, weights):
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    digest = _finish(trainer, tokenizer, out_dir)
    return trainer.state.log_history, digest


def reward_curve(log_history: Sequence[dict[str, Any]]) -> list[dict[str, float]]:
    """(step, reward) rows from a GRPO log history."""
    return [
        {"step": float(row["step"]), "reward": float(row["reward"])}
        for row in log_history
        if "reward" in row and "step" in row
    ]
