"""Where models run: the one `compute:` setting (device, precision), resolved once and passed down.

Every model escrag loads or trains (policy, reward model, embedder, reward encoders, evaluators) takes
its device and precision from a `Compute` made here, never from a literal beside the loading code.
Training keeps fp32 master weights and uses the trainer's bf16 autocast; inference runs under
`Compute.autocast()`, or loads its weights in `Compute.dtype` where it owns the model (generation).

Multi-process training (`accelerate launch`) sets `RANK`/`WORLD_SIZE`; `is_main_process` is what decides
that only rank 0 logs, writes outputs and registers models.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from models.config import ComputeParams, ParamsError

Device = Literal["cpu", "cuda"]
Precision = Literal["fp32", "bf16"]

# Encoder and generation batch sizes by device: a GPU wants large batches, 2 CPU cores do not gain from them.
_ENCODE_BATCH = {"cpu": 32, "cuda": 256}
_GENERATE_BATCH = {"cpu": 8, "cuda": 64}


@dataclass(frozen=True)
class Compute:
    """A resolved device and precision; hashable, so loaders can cache per placement."""

    device: Device
    precision: Precision
    gpu_name: str = ""

    @property
    def dtype(self) -> Any:
        """The torch dtype of inference weights and autocast."""
        import torch

        return torch.bfloat16 if self.precision == "bf16" else torch.float32

    @property
    def encode_batch_size(self) -> int:
        """Batch size of the reward encoders and the embedder."""
        return _ENCODE_BATCH[self.device]

    @property
    def generate_batch_size(self) -> int:
        """Prompts per `generate` call in evaluation."""
        return _GENERATE_BATCH[self.device]

    def trainer_args(self) -> dict[str, bool]:
        """The placement fields of a transformers/TRL `TrainingArguments`. On the CPU, training is made
        bit-for-bit repeatable (`full_determinism`: seeded, deterministic algorithms), which costs nothing
        measurable there; on a GPU it would forbid fast kernels, so `escrag reproduce` reports the largest
        weight difference instead (docs/reproduce.md)."""
        cpu = self.device == "cpu"
        return {"use_cpu": cpu, "bf16": self.precision == "bf16", "fp16": False, "full_determinism": cpu}

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast on the device when the precision asks for it; otherwise nothing."""
        if self.precision != "bf16":
            return contextlib.nullcontext()
        import torch

        return torch.autocast(device_type=self.device, dtype=torch.bfloat16)

    def as_params(self) -> dict[str, str]:
        """What a training run logs as MLflow params."""
        return {
            "compute.device": self.device,
            "compute.precision": self.precision,
            "compute.gpu": self.gpu_name or "none",
            "compute.threads": str(_torch_threads()),  # CPU sums in another order with another thread count
        }


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _cuda_name() -> str | None:
    """The first GPU's name when torch sees CUDA, else None."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def _bf16_supported() -> bool:
    import torch

    return bool(torch.cuda.is_bf16_supported())


def resolve_compute(settings: ComputeParams | None = None) -> Compute:
    """Turn `compute:` (auto | cpu | cuda, auto | fp32 | bf16) into a `Compute`.

    auto: CUDA when torch sees a GPU, else the CPU; bf16 on a GPU that supports it, else fp32. An explicit
    `cuda` without a GPU is a `ParamsError` naming `compute.device`: never a silent fall-back.
    """
    settings = settings or ComputeParams()
    gpu = _cuda_name()
    if settings.device == "cuda" and gpu is None:
        raise ParamsError("params.yaml: compute.device: 'cuda' was asked for, but torch sees no CUDA device")
    device: Device = "cuda" if settings.device == "cuda" or (settings.device == "auto" and gpu) else "cpu"
    if device == "cuda" and "LOCAL_RANK" in os.environ:  # one GPU per process under `accelerate launch`
        import torch

        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    if settings.precision == "auto":
        precision: Precision = "bf16" if device == "cuda" and _bf16_supported() else "fp32"
    else:
        precision = settings.precision
    return Compute(device, precision, gpu if device == "cuda" else "")


def gpu_peak_memory() -> int:
    """Bytes of GPU memory torch allocated at its peak in this process (0 without CUDA)."""
    import torch

    return int(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else 0


def process_rank() -> int:
    """This process's rank under `accelerate launch` / torchrun (0 when launched alone)."""
    return int(os.environ.get("RANK", "0"))


def is_main_process() -> bool:
    """True on rank 0: the one process that logs, writes outputs and registers."""
    return process_rank() == 0


@contextlib.contextmanager
def inference(compute: Compute) -> Iterator[None]:
    """No gradients, and the precision's autocast: how every scorer and encoder runs a forward pass."""
    import torch

    with torch.no_grad(), compute.autocast():
        yield
