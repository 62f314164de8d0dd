"""The two runners bench/grpo.py times: escrag's GRPO stage function and bare TRL `GRPOTrainer`.

Both train the same policy on the same prompts with the same batch, lengths, learning rate and seed; only
the reward functions differ (escrag's named rewards against a trivial length reward).
"""

from __future__ import annotations

import functools
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.compute import Compute
from models.config import Params, load_params
from models.records import dialogues_of_split, load_records

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def project_params() -> Params:
    """The project's params.yaml, read once."""
    return load_params(ROOT / "params.yaml")


@dataclass(frozen=True)
class Batch:
    prompts: int
    generations: int
    tokens: int
    micro: int = 0  # completions per forward/backward pass; 0: the whole step

    @property
    def completions(self) -> int:
        return self.prompts * self.generations

    def __str__(self) -> str:
        return f"{self.prompts} x {self.generations} x {self.tokens}" + (f" /{self.micro}" if self.micro else "")


def random_policy(config_dir: Path, out: Path) -> Path:
    """A policy folder with random weights from `config_dir`'s config.json, and its tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(str(config_dir))
    AutoModelForCausalLM.from_config(config).save_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(str(config_dir))
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    tokenizer.save_pretrained(out)
    return out


def training_examples(tokenizer, compute: Compute, k: int, count: int, seed: int) -> list[dict]:
    """escrag's training prompts from the starter dialogues, guidance by MiniLM cosine over the passages."""
    from models.embedder import load_embedder
    from models.training_data import build_examples

    passages = load_records(ROOT / "starter_data", "knowledge")
    embedder = load_embedder(compute)
    vectors = embedder.encode([p["text"] for p in passages], normalize_embeddings=True)

    def search(query: str, k: int) -> list[dict]:
        scores = vectors @ embedder.encode([query], normalize_embeddings=True)[0]
        return [passages[i] for i in np.argsort(-scores)[:k]]

    dialogues = dialogues_of_split(ROOT / "starter_data", "train")
    examples = build_examples(dialogues, search, tokenizer, k=k, max_examples=count, seed=seed)
    return (examples * (count // len(examples) + 1))[:count]


class StepClock:
    """A TrainerCallback timing each optimizer step (CUDA synchronised), and a timer for reward calls."""

    def __init__(self, cuda: bool) -> None:
        import torch

        self._sync = torch.cuda.synchronize if cuda else (lambda: None)
        self.steps: list[float] = []
        self.rewards: list[float] = [0.0]
        self._start = 0.0

    def callback(self):
        from transformers import TrainerCallback

        clock = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                clock._sync()
                clock._start = time.perf_counter()
                clock.rewards.append(0.0)

            def on_step_end(self, args, state, control, **kwargs):
                clock._sync()
                clock.steps.append(time.perf_counter() - clock._start)

        return _Callback()

    def timed(self, fn):
        def wrapper(*args, **kwargs):
            self._sync()
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            self._sync()
            self.rewards[-1] += time.perf_counter() - start
            return out

        wrapper.__name__ = fn.__name__
        return wrapper


def length_reward(completions, **_):
    """The trivial reward of the bare-TRL runner."""
    return [float(len(c if isinstance(c, str) else str(c))) / 100.0 for c in completions]


def run_bare(policy: Path, examples, batch: Batch, steps: int, compute: Compute, seed: int, clock: StepClock):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(str(policy), padding_side="left")
    with tempfile.TemporaryDirectory() as tmp:
        config = GRPOConfig(output_dir=tmp, report_to=[], save_strategy="no", **grpo_args(batch, steps, compute, seed))
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(str(policy)),
            reward_funcs=[clock.timed(length_reward)],
            args=config,
            train_dataset=Dataset.from_list([{"prompt": e["prompt"]} for e in examples]),
            processing_class=tokenizer,
            callbacks=[clock.callback()],
        )
        trainer.train()
    return trainer.state.log_history


def run_escrag(policy: Path, examples, batch: Batch, steps: int, compute: Compute, seed: int, clock: StepClock):
    from models.policy_training import GrpoSettings, train_grpo
    from models.rewards import RewardResources, build_reward_functions

    params = project_params()
    resources = RewardResources(preference_scorer=preference_scorer(compute), compute=compute)
    funcs, weights = build_reward_functions(params.grpo.rewards, resources)
    args = grpo_args(batch, steps, compute, seed)
    settings = GrpoSettings(
        max_steps=args["max_steps"],
        learning_rate=args["learning_rate"],
        beta=args["beta"],
        num_generations=batch.generations,
        prompts_per_step=batch.prompts,
        max_completion_length=batch.tokens,
        temperature=args["temperature"],
        seed=seed,
        micro_batch_size=batch.micro,
    )
    with tempfile.TemporaryDirectory() as tmp:
        history, _ = train_grpo(
            policy,
            examples,
            [clock.timed(f) for f in funcs],
            weights,
            settings,
            Path(tmp) / "policy",
            report_to=[],
            compute=compute,
            checkpoints=Path(tmp) / "checkpoints",  # checkpoint_steps 0: the bench times training alone
            callbacks=[clock.callback()],
        )
    return history


def grpo_args(batch: Batch, steps: int, compute: Compute, seed: int) -> dict:
    """The GRPOConfig fields both runners share (escrag's train_grpo sets the same from GrpoSettings)."""
    grpo = project_params().grpo
    return {
        "max_steps": steps + 1,
        "learning_rate": grpo.learning_rate,
        "beta": grpo.beta,
        "temperature": grpo.temperature,
        "num_generations": batch.generations,
        "per_device_train_batch_size": batch.micro or batch.completions,
        "gradient_accumulation_steps": batch.completions // (batch.micro or batch.completions),
        "max_completion_length": batch.tokens,
        "gradient_checkpointing": False,
        "logging_steps": 1,
        "seed": seed,
        **compute.trainer_args(),
    }


def preference_scorer(compute: Compute):
    """The project's trained reward model when there is one, else the same architecture untrained."""
    from models.reward_model import RewardModelScorer

    trained = ROOT / "artifacts" / "reward_model"
    if (trained / "config.json").is_file():
        return RewardModelScorer(trained, compute=compute)
    from transformers import AutoTokenizer

    from models.embedder import embedder_path
    from models.pair_encoder import PairEncoderRewardModel
    from models.reward_model import DEFAULT_MAX_LENGTH

    tokenizer = AutoTokenizer.from_pretrained(embedder_path())
    model = PairEncoderRewardModel.from_encoder(embedder_path(), tokenizer)
    return RewardModelScorer.from_model(model, tokenizer, DEFAULT_MAX_LENGTH, compute)
