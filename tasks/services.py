"""The services of a scaled-out escrag on one machine, on loopback: a Prefect server, an MLflow tracking
server (SQLite backend, served artifacts) and one process worker per work pool, each in its own clone.

Every process gets its own session (process group), its log file and its pid in `services.json`, so
`escrag services stop` stops exactly what `start` started. docs/orchestration.md maps each part onto a
team's cluster (PostgreSQL, S3, a Kubernetes GPU pool).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tasks import git_ops
from tasks.dvc_ops import default_remote_url
from tasks.health import is_running, wait_until_answers
from tasks.project import service_environment
from tasks.worker_clone import CLONE_ENV, DVC_REMOTE_ENV, GIT_URL_ENV, ensure_clone

logger = logging.getLogger(__name__)

POOLS = ("cpu", "gpu")
STATE_FILE = "services.json"


class ServiceError(RuntimeError):
    """A service did not come up; the message names it and its log file."""


@dataclass
class Process:
    name: str
    pid: int
    log: str
    url: str | None = None


@dataclass
class Services:
    state_dir: str
    prefect_api_url: str
    mlflow_tracking_uri: str
    processes: list[Process] = field(default_factory=list)

    def environment(self) -> dict[str, str]:
        return {"PREFECT_API_URL": self.prefect_api_url, "MLFLOW_TRACKING_URI": self.mlflow_tracking_uri}

    def save(self) -> Path:
        path = Path(self.state_dir) / STATE_FILE
        path.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, state_dir: Path) -> Services:
        raw = json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
        return cls(**{**raw, "processes": [Process(**p) for p in raw["processes"]]})


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _bin(name: str) -> str:
    """A console script of this Python environment (prefect, mlflow, escrag)."""
    return str(Path(sys.executable).parent / name)


def _spawn(name: str, argv: list[str], env: dict[str, str], cwd: Path, logs: Path) -> Process:
    log = logs / f"{name}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    logger.info("started %s (pid %d), log %s", name, proc.pid, log)
    return Process(name, proc.pid, str(log))


def _wait_healthy(process: Process, url: str, timeout_s: float) -> None:
    if wait_until_answers(url, timeout_s, alive=lambda: is_running(process.pid)):
        return
    if not is_running(process.pid):
        raise ServiceError(f"{process.name} exited during start-up; see {process.log}")
    raise ServiceError(f"{process.name} not healthy at {url} after {timeout_s:.0f} s; see {process.log}")


def base_environment(project_root: Path, state: Path) -> dict[str, str]:
    env = {**os.environ, **service_environment(project_root)}
    env.pop("ESCRAG_PROJECT", None)  # workers find their project in their own clone
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PREFECT_HOME"] = str(state / "prefect")
    return env


def start_servers(project_root: Path, state: Path, host: str, timeout_s: float) -> Services:
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = base_environment(project_root, state)
    prefect_port, mlflow_port = free_port(host), free_port(host)
    api_url = f"http://{host}:{prefect_port}/api"
    prefect = _spawn(
        "prefect-server",
        [_bin("prefect"), "server", "start", "--host", host, "--port", str(prefect_port)],
        {**env, "PREFECT_UI_API_URL": api_url},  # the UI in a browser calls this address, not the default :4200
        state,
        logs,
    )
    mlflow_dir = state / "mlflow"
    mlflow_dir.mkdir(exist_ok=True)
    mlflow = _spawn(
        "mlflow-server",
        [_bin("mlflow"), "server", "--host", host, "--port", str(mlflow_port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{mlflow_dir / 'mlflow.db'}",
         "--serve-artifacts", "--artifacts-destination", str(mlflow_dir / "artifacts")],
        env,
        state,
        logs,
    )  # fmt: skip
    services = Services(str(state), api_url, f"http://{host}:{mlflow_port}")
    prefect.url, mlflow.url = services.prefect_api_url, services.mlflow_tracking_uri
    services.processes += [prefect, mlflow]
    services.save()
    _wait_healthy(prefect, f"{services.prefect_api_url}/health", timeout_s)
    _wait_healthy(mlflow, f"{services.mlflow_tracking_uri}/health", timeout_s)
    return services


def create_pools(services: Services, env: dict[str, str], gpu_slots: int) -> None:
    """The `cpu` and `gpu` process pools; the gpu pool runs one flow at a time per GPU."""
    env = {**env, **services.environment()}
    for pool in POOLS:
        subprocess.run([_bin("prefect"), "work-pool", "create", pool, "--type", "process", "--overwrite"],
                       env=env, check=True, capture_output=True)  # fmt: skip
    subprocess.run([_bin("prefect"), "work-pool", "set-concurrency-limit", "gpu", str(gpu_slots)],
                   env=env, check=True, capture_output=True)  # fmt: skip


def start_workers(services: Services, env: dict[str, str], git_url: str, dvc_remote: str | None) -> None:
    """One process worker per pool, each with its own clone of `git_url` under the state folder."""
    state = Path(services.state_dir)
    for pool in POOLS:
        clone = state / "clones" / pool
        worker_env = {**env, **services.environment(), CLONE_ENV: str(clone), GIT_URL_ENV: git_url}
        worker_env["PREFECT_HOME"] = str(state / f"worker-{pool}")
        if dvc_remote:
            worker_env[DVC_REMOTE_ENV] = dvc_remote
        with _env(worker_env):
            ensure_clone(clone)
        process = _spawn(
            f"worker-{pool}",
            [_bin("prefect"), "worker", "start", "--pool", pool, "--type", "process", "--name", f"{pool}-worker"],
            worker_env,
            clone.parent,
            state / "logs",
        )
        services.processes.append(process)
        services.save()


@contextlib.contextmanager
def _env(env: dict[str, str]) -> Iterator[None]:
    """Temporarily apply an environment (for helpers that read os.environ)."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def default_git_url(project_root: Path) -> str:
    """Where workers clone from: the project's `origin`, else the project folder itself (one machine)."""
    if git_ops.has_remote(project_root):
        return git_ops.git(project_root, "remote", "get-url", git_ops.REMOTE)
    return str(project_root)


def stop(state: Path, timeout_s: float = 20.0) -> list[tuple[str, int, bool]]:
    """SIGTERM each process group (workers first, so no flow run is left orphaned), then SIGKILL."""
    services = Services.load(state)
    results = []
    for process in reversed(services.processes):
        if is_running(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while is_running(process.pid) and time.monotonic() < deadline:
                _reap(process.pid)
                time.sleep(0.2)
            if is_running(process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                time.sleep(0.5)
                _reap(process.pid)
        results.append((process.name, process.pid, not is_running(process.pid)))
    return results


def _reap(pid: int) -> None:
    """Collect a child's exit status when this process started it (else it lingers as a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def status(state: Path) -> list[tuple[Process, bool]]:
    return [(p, is_running(p.pid)) for p in Services.load(state).processes]


def gpu_slots() -> int:
    """How many flow runs the gpu pool takes at once: one per visible GPU (at least one)."""
    import torch

    return max(1, torch.cuda.device_count())


def start(
    project_root: Path,
    state: Path,
    host: str = "127.0.0.1",
    timeout_s: float = 120.0,
    git_url: str | None = None,
    dvc_remote: str | None = None,
) -> Services:
    """Prefect server, MLflow server, pools and workers; on any failure everything started is stopped."""
    state.mkdir(parents=True, exist_ok=True)
    if (state / STATE_FILE).exists() and any(alive for _, alive in status(state)):
        raise ServiceError(f"services from {state / STATE_FILE} are still running: `escrag services stop` first")
    try:
        services = start_servers(project_root, state, host, timeout_s)
        env = base_environment(project_root, state)
        create_pools(services, env, gpu_slots())
        start_workers(
            services, env, git_url or default_git_url(project_root), dvc_remote or default_remote_url(project_root)
        )
    except BaseException:
        if (state / STATE_FILE).exists():
            stop(state)
        raise
    return services
