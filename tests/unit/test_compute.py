"""The one compute setting: resolution, refusal without a GPU, trainer fields; and the recipes that set it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from models import compute as compute_module
from models.compute import Compute, resolve_compute
from models.config import ComputeParams, Params, ParamsError
from tasks.recipes import apply_recipe, recipe_path


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(compute_module, "_cuda_name", lambda: None)


@pytest.fixture
def h200(monkeypatch):
    monkeypatch.setattr(compute_module, "_cuda_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(compute_module, "_bf16_supported", lambda: True)
    monkeypatch.delenv("LOCAL_RANK", raising=False)


def test_auto_without_a_gpu_is_cpu_fp32(no_gpu):
    resolved = resolve_compute(ComputeParams())
    assert resolved == Compute("cpu", "fp32", "")
    assert resolved.trainer_args() == {"use_cpu": True, "bf16": False, "fp16": False, "full_determinism": True}
    params = resolved.as_params()
    assert params.pop("compute.threads").isdigit()
    assert params == {"compute.device": "cpu", "compute.precision": "fp32", "compute.gpu": "none"}


def test_cuda_without_a_gpu_names_the_key(no_gpu):
    with pytest.raises(ParamsError, match=r"compute\.device"):
        resolve_compute(ComputeParams(device="cuda"))


def test_auto_on_a_gpu_is_cuda_bf16_with_its_name(h200):
    resolved = resolve_compute(ComputeParams())
    assert (resolved.device, resolved.precision, resolved.gpu_name) == ("cuda", "bf16", "NVIDIA H200")
    assert resolved.trainer_args() == {"use_cpu": False, "bf16": True, "fp16": False, "full_determinism": False}
    assert resolved.encode_batch_size > resolve_compute(ComputeParams(device="cpu")).encode_batch_size


def test_explicit_settings_win_over_auto(h200):
    assert resolve_compute(ComputeParams(device="cpu")) == Compute("cpu", "fp32", "")
    assert resolve_compute(ComputeParams(precision="fp32")).precision == "fp32"
    assert resolve_compute(ComputeParams(device="cpu", precision="bf16")).precision == "bf16"


def test_unknown_device_is_refused():
    with pytest.raises(ValueError, match="device"):
        Params.model_validate({"compute": {"device": "tpu"}})


def test_micro_batch_must_divide_the_step():
    Params.model_validate({"grpo": {"num_generations": 8, "prompts_per_step": 16, "micro_batch_size": 32}})
    with pytest.raises(ValueError, match="micro_batch_size"):
        Params.model_validate({"grpo": {"num_generations": 4, "prompts_per_step": 1, "micro_batch_size": 3}})


def test_no_placement_literal_outside_models_compute(repo_root):
    forbidden = re.compile(r'use_cpu=True|device="cpu"|\.to\("cpu"\)')
    offenders = [
        f"{path.relative_to(repo_root)}:{n}"
        for folder in ("models", "tasks", "flows")
        for path in (repo_root / folder).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if forbidden.search(line)
    ]
    assert offenders == []


@pytest.fixture
def project(tmp_path, repo_root) -> Path:
    shutil.copy(repo_root / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(repo_root / "recipes", tmp_path / "recipes")
    return tmp_path


def test_gpu_recipe_writes_its_values_and_keeps_comments(project):
    changed = apply_recipe(project / "params.yaml", recipe_path(project, "gpu"))
    assert {"compute.device", "compute.precision", "grpo.num_generations", "grpo.micro_batch_size"} <= set(changed)
    text = (project / "params.yaml").read_text()
    assert "# The single source of stage settings" in text
    import yaml

    params = Params.model_validate(yaml.safe_load(text))
    assert (params.compute.device, params.compute.precision, params.grpo.num_generations) == ("cuda", "bf16", 8)
    assert apply_recipe(project / "params.yaml", recipe_path(project, "gpu")) == [], "applying twice changes nothing"


def test_a_refused_recipe_leaves_params_untouched(project, tmp_path):
    before = (project / "params.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text("grpo:\n  num_generations: 1\n")
    with pytest.raises(ParamsError, match=r"bad\.yaml: grpo\.num_generations"):
        apply_recipe(project / "params.yaml", bad)

    def refuse(params):
        raise ParamsError("params.yaml: compute.device: no GPU here")

    with pytest.raises(ParamsError, match="compute.device"):
        apply_recipe(project / "params.yaml", recipe_path(project, "gpu"), accept=refuse)
    assert (project / "params.yaml").read_text() == before
    with pytest.raises(ParamsError, match="known: gpu"):
        recipe_path(project, "tpu")
