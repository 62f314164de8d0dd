"""The fault suite's one project, taken from nothing to a registered model by runs that each die, tracked to
a real MLflow server whose store lives in the project (`.mlflow/`, so a direct client reads it too):

1. no server answers: `escrag run` stops before any work (fault 7);
2. the server is up; `kill -9` in the middle of the data push (fault 2);
3. `kill -9` while the reward model trains (fault 2);
4. `kill -9` after GRPO's first checkpoint (fault 1);
5. a run that finishes, with secrets in its environment (fault 10), while a second `escrag run` is refused
   (fault 6): it resumes GRPO from the checkpoint and registers each model once (faults 1, 2, 7).

Each step keeps what it found in `Scenario.seen`, before later faults change the project.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from flows.cli import RUN_LOCK
from models.policy_training import checkpoint_step, last_checkpoint
from tasks import dvc_ops
from tasks.file_lock import holder
from tasks.health import wait_until_answers
from tasks.project import Project
from tests.integration.conftest import escrag_env
from tests.integration.project_copy import git

PUSHED_BEFORE_KILL = 2  # whole objects in the remote when the kill lands inside the third upload

# `escrag run` in this process, with DVC's file copy wrapped: the third object bound for the remote is written
# under its temporary name, then the whole process group is killed before DVC renames it into place.
KILLED_IN_PUSH = f"""
import os, signal, sys
from dvc_objects.fs import local

real, remote, uploads = local.copyfile, sys.argv[2], []

def copy_then_die(src, dest, *args, **kwargs):
    real(src, dest, *args, **kwargs)
    if str(dest).startswith(remote):
        uploads.append(dest)
        if len(uploads) > {PUSHED_BEFORE_KILL}:
            os.killpg(0, signal.SIGKILL)

local.copyfile = copy_then_die
from flows.cli import main
sys.exit(main(["--project", sys.argv[1], "run"]))
"""


@dataclass
class Scenario:
    root: Path
    env: dict[str, str]  # every run's environment: the server's URI and the secrets
    committed: dict = field(default_factory=dict)  # dvc.lock's stages as committed in git, before any run
    seen: dict = field(default_factory=dict)
    final: subprocess.CompletedProcess | None = None

    @property
    def tracking_uri(self) -> str:
        return self.env["MLFLOW_TRACKING_URI"]

    def client(self):
        from mlflow import MlflowClient

        return MlflowClient(tracking_uri=self.tracking_uri)

    def versions(self, name: str) -> int:
        return len(self.client().search_model_versions(f"name='{name}'"))

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """`escrag ARGS` on the project (or the one at `cwd`) with the scenario's environment, to the end."""
        project = cwd or self.root
        return subprocess.run([sys.executable, "-m", "flows.cli", "--project", str(project), *args], cwd=project,
                              env=self.env, capture_output=True, text=True, timeout=1200)  # fmt: skip

    def escrag(self, *args: str, **popen) -> subprocess.Popen:
        """`escrag ARGS` on the project with the scenario's environment, started and not waited for."""
        return subprocess.Popen(
            [sys.executable, "-m", "flows.cli", "--project", str(self.root), *args], cwd=self.root, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen,
        )  # fmt: skip


def start_mlflow_server(root: Path, port: int) -> subprocess.Popen:
    """A real tracking server on `port`, its store the project's `.mlflow/`; healthy when returned."""
    store = root / ".mlflow"
    store.mkdir(exist_ok=True)
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
         "--serve-artifacts", "--artifacts-destination", str(store / "artifacts")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=escrag_env(), start_new_session=True,
    )  # fmt: skip
    if wait_until_answers(f"http://127.0.0.1:{port}/health", 180, alive=lambda: server.poll() is None):
        return server
    server.kill()
    raise RuntimeError(f"mlflow server on port {port} did not start")


def _kill_when(process: subprocess.Popen, ready: Callable[[], bool], settle_s: float = 0.0) -> str | None:
    """kill -9 the process group of `process` once `ready()` holds (`settle_s` later). None when it was killed;
    else the stderr of a run that ended (or hung 20 minutes) first."""
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline and process.poll() is None:
        if ready():
            time.sleep(settle_s)
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return None
        time.sleep(0.5)
    process.kill()
    return process.communicate()[1] or "never reached the point of the kill"


def _dvc(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True, text=True,
                          env=escrag_env())  # fmt: skip


def missing_in_remote(root: Path) -> int:
    """How many entries of data.dvc (files, and the folder itself) `dvc status -c` finds not in the remote."""
    result = _dvc(root, "status", "-c", "data.dvc", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    return len(json.loads(result.stdout or "{}"))


def corrupt_objects(store: Path) -> list[str]:
    """Objects in a DVC store (cache or remote) whose md5 is not their name: none may exist, ever."""
    bad = []
    for path in (store / "files" / "md5").glob("*/*"):
        if path.name.startswith("."):
            continue  # a temporary upload a kill left behind: never read as an object
        oid = path.parent.name + path.name.removesuffix(".dir")
        if hashlib.md5(path.read_bytes()).hexdigest() != oid:  # noqa: S324 - DVC's own object names
            bad.append(str(path.relative_to(store)))
    return bad


def checkpoints(root: Path) -> Path:
    return Project(root).state / "checkpoints"


def recorded(root: Path) -> dict[str, dict]:
    """dvc.lock's entry for each stage (the project's copy starts with the one committed in git)."""
    path = root / "dvc.lock"
    return yaml.safe_load(path.read_text())["stages"] if path.exists() else {}


def _stage_started(s: Scenario, stage: str) -> bool:
    client = s.client()
    experiment = client.get_experiment_by_name("escrag")
    return experiment is not None and bool(
        client.search_runs([experiment.experiment_id], f"tags.`escrag.stage` = '{stage}'")
    )


def step_no_server(s: Scenario) -> None:
    s.committed = recorded(s.root)
    started = time.monotonic()
    run = s.escrag("run")
    _, err = run.communicate(timeout=600)
    s.seen["no_server"] = {"code": run.returncode, "stderr": err, "seconds": time.monotonic() - started,
                           "artifacts": (s.root / "artifacts").exists(), "lock": recorded(s.root)}  # fmt: skip


def step_kill_in_push(s: Scenario, repo_root: Path) -> None:
    store = s.root / ".dvcstore"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_IN_PUSH, str(s.root), str(store)],
        cwd=repo_root, env=s.env, capture_output=True, text=True, timeout=900, start_new_session=True,
    )  # fmt: skip
    objects = [p for p in (store / "files" / "md5").glob("*/*") if not p.name.startswith(".")]
    s.seen["push"] = {"code": killed.returncode, "stderr": killed.stderr, "objects": len(objects),
                      "missing": missing_in_remote(s.root), "corrupt": corrupt_objects(store)}  # fmt: skip


def step_kill_in_reward_model(s: Scenario) -> None:
    failed = _kill_when(s.escrag("run", start_new_session=True), lambda: _stage_started(s, "reward_model"), 5)
    s.seen["reward_model"] = {"failed": failed, "lock": recorded(s.root), "missing": missing_in_remote(s.root),
                              "versions": s.versions("escrag-reward")}  # fmt: skip


def step_kill_in_grpo(s: Scenario) -> None:
    folder = checkpoints(s.root)

    def resumable() -> Path | None:
        return last_checkpoint(next(folder.glob("grpo-*"), folder))

    failed = _kill_when(s.escrag("run", start_new_session=True), lambda: resumable() is not None)
    s.seen["grpo"] = {
        "failed": failed, "at": checkpoint_step(resumable()) if resumable() else None, "lock": recorded(s.root),
        "policies": s.versions("escrag-policy"), "rewards": s.versions("escrag-reward"),
        "policy_folder": (s.root / "artifacts" / "policy").exists(),
    }  # fmt: skip


def step_final_run(s: Scenario, clone: Path) -> None:
    """The run that finishes; a second one is started as soon as it holds the project. Then a git clone of the
    project restores its data version from the remote, into `clone`."""
    first = s.escrag("run")
    lock = Project(s.root).state / RUN_LOCK
    deadline = time.monotonic() + 300
    while f"pid {first.pid} " not in holder(lock) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)  # the killed runs left their names in the file: wait for this one's
    started = time.monotonic()
    second = s.escrag("run")
    out2, err2 = second.communicate(timeout=300)
    s.seen["second"] = {"code": second.returncode, "stderr": err2, "seconds": time.monotonic() - started}
    out, err = first.communicate(timeout=1800)
    s.final = subprocess.CompletedProcess(first.args, first.returncode, out, err)
    status = _dvc(s.root, "status", "--json")
    s.seen["final"] = {"dvc_status": status.stdout.strip(), "missing": missing_in_remote(s.root),
                       "corrupt": corrupt_objects(s.root / ".dvcstore") + corrupt_objects(dvc_ops.cache_dir(s.root)),
                       "policies": s.versions("escrag-policy"), "rewards": s.versions("escrag-reward"),
                       "checkpoints": list(checkpoints(s.root).glob("grpo-*")), "grpo_steps": _grpo_steps(s),
                       "clone": _clone_checkout(s, clone)}  # fmt: skip


def _grpo_steps(s: Scenario) -> list[int]:
    """The steps the last GRPO run logged a reward for."""
    run_id = json.loads((s.root / "artifacts" / "grpo" / "run.json").read_text())["mlflow_run_id"]
    return sorted(m.step for m in s.client().get_metric_history(run_id, "reward"))


def _clone_checkout(s: Scenario, into: Path) -> dict:
    """`escrag data checkout HEAD` in a git clone of the project, from its DVC remote: the exit code, stderr,
    and the files whose md5 is not data.dvc's."""
    git(into.parent, "clone", "-q", str(s.root), str(into))
    _dvc(into, "remote", "modify", "--local", "local", "url", str(s.root / ".dvcstore"))
    checkout = s.run("data", "checkout", "HEAD", cwd=into)
    mismatched = dvc_ops.mismatched_files(into, dvc_ops.data_md5(into) or "?")
    return {"code": checkout.returncode, "stderr": checkout.stderr, "mismatched": mismatched}
