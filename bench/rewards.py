"""Reward computation time against a GRPO step, at the default settings of params.yaml.

Run: .venv/bin/python bench/rewards.py [--grpo-step-seconds 14.5] [--repeats 20] [--tiny-grpo 4]

One GRPO step at the defaults scores num_generations x prompts_per_step completions (4 x 1) with the
rewards named in params.yaml grpo.rewards. This bench builds one real prompt context (a starter eval
dialogue, guidance retrieved from artifacts/index), four completions of ~64 tokens in the trained form
(reasoning, </think>, a reply), and calls the TRL reward functions exactly as GRPOTrainer calls them.
It reports the median over --repeats of each reward and of the whole set, both with the passage
embeddings cached (the steady state: 167 passages recur) and with the cache emptied before each call
(a step whose passages are all new), against --grpo-step-seconds (14-15 s measured on this 2-core
machine for SmolLM2 at the defaults). --tiny-grpo N also runs N real GRPO steps of a tiny random Llama
with the same reward functions (timed inside the trainer); its completions are random tokens, so its
reward share is only a lower bound and the default-settings ratio is the number that matters.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from models.dialogue import contexts_for_training, infer_stage, last_seeker_text, render_turns, retrieval_query
from models.records import dialogues_of_split, load_records
from models.rewards import REWARD_NAMES, RewardResources, build_reward_functions

ROOT = Path(__file__).resolve().parents[1]
CONTEXT_TURNS = 4  # models.training_data.MAX_CONTEXT_TURNS


def example_columns(k: int) -> dict:
    """One real prompt context with guidance: the columns GRPO passes to the reward functions."""
    from models.embedder import load_embedder

    dialogue = dialogues_of_split(ROOT / "starter_data", "eval")[0]
    context = contexts_for_training(dialogue)[1]
    turns = dialogue["turns"]
    query = retrieval_query(dialogue.get("situation", ""), context)
    if (ROOT / "artifacts" / "index").exists():
        from models.config import load_params
        from models.retriever import Retriever

        table = load_params(ROOT / "params.yaml").index.table
        passages = Retriever(ROOT / "artifacts" / "index", table, load_embedder()).search(query, k=k)
    else:
        passages = load_records(ROOT / "starter_data", "knowledge")[:k]
    return {
        "guidance": [p["text"] for p in passages],
        "guidance_strategies": [p["strategy"] for p in passages],
        "stage": infer_stage(len(context) / len(turns), turns[len(context)].get("strategy")),
        "seeker_text": last_seeker_text(context),
        "context_text": render_turns(context[-CONTEXT_TURNS:]),
    }


def completions(columns: dict, n: int) -> list[str]:
    """n completions of ~64 tokens in the trained form, with different replies from the starter dialogues."""
    replies = [t["text"] for d in load_records(ROOT / "starter_data", "dialogues") for t in d["turns"][1:]]
    replies = [r for r in replies if 15 <= len(r.split()) <= 30]
    think = (
        f"The seeker is in the {columns['stage']} stage and feels overwhelmed. Reflection of feelings fits "
        "because they need to feel heard. Guidance [1] applies."
    )
    return [f"{think}</think>\n{replies[i * 7 % len(replies)]}" for i in range(n)]


def reward_setup(weights: dict[str, float]) -> tuple[list, list[float], RewardResources]:
    from models.embedder import load_embedder
    from models.reward_model import RewardModelScorer

    model_dir = ROOT / "artifacts" / "reward_model"
    if (model_dir / "config.json").is_file():
        scorer = RewardModelScorer(model_dir)
    else:  # same architecture and cost, untrained (pure MiniLM relevance)
        from transformers import AutoTokenizer

        from models.embedder import embedder_path
        from models.pair_encoder import PairEncoderRewardModel
        from models.reward_model import DEFAULT_MAX_LENGTH

        tokenizer = AutoTokenizer.from_pretrained(embedder_path())
        model = PairEncoderRewardModel.from_encoder(embedder_path(), tokenizer)
        scorer = RewardModelScorer.from_model(model, tokenizer, DEFAULT_MAX_LENGTH)
    resources = RewardResources(load_embedder(), scorer)
    funcs, ws = build_reward_functions(weights, resources)
    return funcs, ws, resources


def time_rewards(funcs, resources, texts, columns, repeats: int, cold: bool) -> dict[str, float]:
    n = len(texts)
    kwargs = {key: [value] * n for key, value in columns.items()}
    times: dict[str, list[float]] = {f.__name__: [] for f in funcs}
    totals = []
    for fn in funcs:  # warm-up: loads, first-call overheads
        fn(prompts=["p"] * n, completions=texts, **kwargs)
    for _ in range(repeats):
        if cold:
            resources._passage_cache.clear()
        step = 0.0
        for fn in funcs:
            start = time.perf_counter()
            fn(prompts=["p"] * n, completions=texts, completion_ids=[[0]] * n, **kwargs)
            elapsed = time.perf_counter() - start
            times[fn.__name__].append(elapsed)
            step += elapsed
        totals.append(step)
    return {**{k: statistics.median(v) for k, v in times.items()}, "all": statistics.median(totals)}


def tiny_grpo(funcs, weights, columns, steps: int, num_generations: int, max_len: int) -> dict[str, float]:
    """Real GRPO steps of a tiny random Llama with these rewards; step and reward time from inside TRL."""
    import tempfile

    from datasets import Dataset
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from models.prompts import build_prompt

    spent: list[float] = []

    def timed(fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            spent.append(time.perf_counter() - start)
            return out

        wrapper.__name__ = fn.__name__
        return wrapper

    tokenizer = AutoTokenizer.from_pretrained(str(ROOT / "artifacts" / "base_model"))
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4
    )
    model = LlamaForCausalLM(config)
    turns = [{"speaker": "seeker", "text": columns["seeker_text"]}]
    passages = [
        {"strategy": s, "stage": "any", "title": "guidance", "text": t}
        for s, t in zip(columns["guidance_strategies"], columns["guidance"], strict=True)
    ]
    row = {"prompt": build_prompt(tokenizer, turns, passages), **columns}
    with tempfile.TemporaryDirectory() as tmp:
        args = GRPOConfig(
            output_dir=tmp,
            max_steps=steps,
            num_generations=num_generations,
            per_device_train_batch_size=num_generations,
            max_completion_length=max_len,
            reward_weights=weights,
            use_cpu=True,
            bf16=False,
            report_to=[],
            logging_steps=1,
            save_strategy="no",
            beta=0.0,
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[timed(f) for f in funcs],
            args=args,
            train_dataset=Dataset.from_list([row] * steps),
            processing_class=tokenizer,
        )
        trainer.train()
    step_times = [r["step_time"] for r in trainer.state.log_history if "step_time" in r]
    per_step = [sum(spent[i : i + len(funcs)]) for i in range(0, len(spent), len(funcs))]
    return {
        "step": statistics.median(step_times[1:] or step_times),
        "rewards": statistics.median(per_step[1:] or per_step),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grpo-step-seconds", type=float, default=14.5, help="measured SmolLM2 GRPO step (s)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tiny-grpo", type=int, default=0, metavar="STEPS", help="also run STEPS tiny GRPO steps")
    args = parser.parse_args()

    from models.config import load_params

    params = load_params(ROOT / "params.yaml")
    grpo = params.grpo
    n = grpo.num_generations * grpo.prompts_per_step
    columns = example_columns(params.retrieval.k)
    texts = completions(columns, n)
    sets = {"params.yaml rewards": dict(grpo.rewards), "all six rewards": dict.fromkeys(REWARD_NAMES, 1.0)}
    print(
        f"batch: {n} completions (num_generations {grpo.num_generations} x prompts_per_step "
        f"{grpo.prompts_per_step}), ~{statistics.fmean(len(t.split()) for t in texts):.0f} words each; "
        f"GRPO step {args.grpo_step_seconds:.1f} s; median of {args.repeats}\n"
    )
    print(f"{'reward set':<22} {'reward':<14} {'cached ms':>9} {'cold ms':>9} {'% of step':>9}")
    for label, weights in sets.items():
        funcs, ws, resources = reward_setup(weights)
        warm = time_rewards(funcs, resources, texts, columns, args.repeats, cold=False)
        cold = time_rewards(funcs, resources, texts, columns, args.repeats, cold=True)
        for name in [*warm][:-1] + ["all"]:
            share = 100 * cold[name] / args.grpo_step_seconds
            print(f"{label:<22} {name:<14} {1000 * warm[name]:>9.1f} {1000 * cold[name]:>9.1f} {share:>8.2f}%")
        ratio = args.grpo_step_seconds / cold["all"]
        print(f"{label:<22} {'step/rewards':<14} {'':>9} {ratio:>8.0f}x\n")
    if args.tiny_grpo:
        funcs, ws, _ = reward_setup(dict(grpo.rewards))
        tiny = tiny_grpo(funcs, ws, columns, args.tiny_grpo, grpo.num_generations, grpo.max_completion_length)
        print(
            f"tiny random Llama GRPO ({args.tiny_grpo} steps, median after the first): step {tiny['step']:.2f} s, "
            f"rewards {1000 * tiny['rewards']:.1f} ms ({100 * tiny['rewards'] / tiny['step']:.1f}% of its step; "
            "random-token completions, so a lower bound)"
        )


if __name__ == "__main__":
    main()
