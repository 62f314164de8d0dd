"""escrag's GRPO stage against bare TRL `GRPOTrainer`, side by side in one run.

Run: .venv/bin/python bench/grpo.py [--steps 3] [--model-config DIR] [--json OUT]

Both runners train the same policy (random weights built from the SmolLM2-135M config: timing only, the
completions are noise and always run to the length limit) on the same escrag training prompts (starter
dialogues, guidance retrieved by MiniLM, the project's prompt builder), with the same batch, lengths,
learning rate and seed. Bare TRL scores with a trivial reward (completion length); escrag runs
`models.policy_training.train_grpo`, the function of its `grpo` stage, with the rewards and weights of
params.yaml `grpo.rewards`, their encoders placed by `compute` like the stage's. Each runner runs twice
per batch, in ABBA order (bare, escrag, escrag, bare), each run in a fresh process. For each batch it
prints the median step time over the timed steps (each run's first step is a warm-up and not counted),
completion tokens per second, the share of the step spent in the reward functions, and the peak memory
(GPU allocated by torch, else the process's RSS).

Batches: params.yaml's (the CPU default) always; where CUDA is present also 16 x 8 x 256 and 64 x 8 x 256
(prompts x generations x completion tokens), in the precision `compute` resolves to (bf16 on an H200).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from grpo_runners import (
    ROOT,
    Batch,
    StepClock,
    project_params,
    random_policy,
    run_bare,
    run_escrag,
    training_examples,
)

from models.compute import Compute, resolve_compute

GPU_BATCHES = ((16, 8, 256, 32), (64, 8, 256, 32))  # micro-batches of 32 completions, as recipes/gpu.yaml


class PeakMemory:
    """Peak GPU memory allocated by torch, or peak process RSS (sampled) on the CPU, during a block."""

    def __init__(self, cuda: bool) -> None:
        self.cuda, self.peak, self._stop = cuda, 0, threading.Event()

    def __enter__(self) -> PeakMemory:
        import torch

        if self.cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        else:
            threading.Thread(target=self._sample, daemon=True).start()
        return self

    def _sample(self) -> None:
        import psutil

        process = psutil.Process()
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, process.memory_info().rss)

    def __exit__(self, *exc) -> None:
        import torch

        self._stop.set()
        if self.cuda:
            self.peak = torch.cuda.max_memory_allocated()


def measure(runner, policy, examples, batch, steps, compute, seed) -> dict:
    """One runner's raw figures: timed step and reward seconds, completion tokens per step, peak memory."""
    clock = StepClock(compute.device == "cuda")
    with PeakMemory(compute.device == "cuda") as memory:
        history = runner(policy, examples, batch, steps, compute, seed, clock)
    lengths = [row["completions/mean_length"] for row in history if "completions/mean_length" in row][1:]
    return {  # the warm-up step dropped ([0] of rewards is the time before any step)
        "step_s": clock.steps[1:],
        "reward_s": clock.rewards[2:],
        "tokens": [n * batch.completions for n in lengths],
        "peak_bytes": memory.peak,
    }


def combine(runs: list[dict]) -> dict:
    """A runner's figures over its runs (ABBA order: each runner once early, once late)."""
    step_s = [t for run in runs for t in run["step_s"]]
    return {
        "step_s": statistics.median(step_s),
        "tokens_per_s": sum(n for run in runs for n in run["tokens"]) / sum(step_s),
        "reward_share": sum(t for run in runs for t in run["reward_s"]) / sum(step_s),
        "peak_bytes": max(run["peak_bytes"] for run in runs),
    }


RUNNERS = {"bare": run_bare, "escrag": run_escrag}
ORDER = ("bare", "escrag", "escrag", "bare")  # ABBA: drift over the run (caches, heat) falls on both alike


def run_single(args: argparse.Namespace, compute: Compute, seed: int) -> None:
    """--single: one runner in this process (a fresh one, so memory and warm caches are its own)."""
    examples = json.loads(args.examples.read_text())
    batch = Batch(*args.batch)
    result = measure(RUNNERS[args.single], args.policy, examples, batch, args.steps, compute, seed)
    args.result.write_text(json.dumps(result))


def spawn(args: argparse.Namespace, runner: str, batch: Batch, policy: Path, examples: Path, result: Path) -> dict:
    command = [sys.executable, __file__, "--single", runner, "--steps", str(args.steps), "--policy", str(policy)]
    command += ["--examples", str(examples), "--result", str(result), "--batch"]
    command += [str(v) for v in (batch.prompts, batch.generations, batch.tokens, batch.micro)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(result.read_text())


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per run, after one warm-up step")
    parser.add_argument(
        "--model-config",
        type=Path,
        default=ROOT / "artifacts" / "base_model",
        help="folder with the policy's config.json and tokenizer (default: artifacts/base_model)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    for internal in ("--single", "--policy", "--examples", "--result"):  # one run in a child process
        parser.add_argument(internal, type=Path if internal != "--single" else str, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, nargs=4, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    params = project_params()
    compute = resolve_compute(params.compute)
    if args.single:
        return run_single(args, compute, params.seed)
    from transformers import AutoTokenizer

    grpo = params.grpo
    batches = [Batch(grpo.prompts_per_step, grpo.num_generations, grpo.max_completion_length, grpo.micro_batch_size)]
    if compute.device == "cuda":
        batches += [Batch(*b) for b in GPU_BATCHES]
    tokenizer = AutoTokenizer.from_pretrained(str(args.model_config))
    count = max(b.prompts for b in batches) * (args.steps + 1)
    examples = training_examples(tokenizer, compute, params.retrieval.k, count, params.seed)
    prompt_tokens = [len(tokenizer(e["prompt"], add_special_tokens=False)["input_ids"]) for e in examples]
    print(
        f"escrag GRPO stage against bare TRL GRPOTrainer on {compute.device} ({compute.gpu_name or 'no GPU'}), "
        f"{compute.precision}; random weights from {args.model_config.name}/config.json (timing only); "
        f"prompts of {min(prompt_tokens)}-{max(prompt_tokens)} tokens; each runner twice in ABBA order, "
        f"each run {args.steps} timed steps after 1 warm-up, in its own process",
        flush=True,
    )
    memory = "peak GPU MiB" if compute.device == "cuda" else "peak RSS MiB"
    print(f"{'P x G x T /micro':<18} {'runner':<7} {'step s':>7} {'tok/s':>9} {'reward %':>9} {memory:>13}", flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        policy = random_policy(args.model_config, Path(tmp) / "policy")
        saved = Path(tmp) / "examples.json"
        saved.write_text(json.dumps(examples))
        for batch in batches:
            runs: dict[str, list[dict]] = {"bare": [], "escrag": []}
            for i, runner in enumerate(ORDER):
                runs[runner].append(spawn(args, runner, batch, policy, saved, Path(tmp) / f"run{i}.json"))
            row = {"batch": str(batch), **{name: combine(r) for name, r in runs.items()}}
            results.append(row)
            print_row(row)
    if args.json:
        args.json.write_text(json.dumps({"device": compute.as_params(), "results": results}, indent=2))


def print_row(row: dict) -> None:
    bare, ours = row["bare"], row["escrag"]
    for name, m in (("bare", bare), ("escrag", ours)):
        print(
            f"{row['batch']:<18} {name:<7} {m['step_s']:7.2f} {m['tokens_per_s']:9.0f} "
            f"{100 * m['reward_share']:8.1f}% {m['peak_bytes'] / 2**20:13.0f}"
        )
    print(
        f"{'':<18} escrag/bare: step {ours['step_s'] / bare['step_s']:.3f}x, "
        f"throughput {ours['tokens_per_s'] / bare['tokens_per_s']:.3f}x",
        flush=True,
    )


if __name__ == "__main__":
    main()
