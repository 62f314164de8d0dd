"""A project as a team would run it scaled out, on one machine: a bare git remote, a DVC remote folder,
and `escrag services start` (Prefect server, MLflow server, a worker per pool, each in its own clone).
Used by tests/integration/test_orchestration.py and bench/orchestration.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.integration.project_copy import copy_project, git, set_params

ESCRAG = [sys.executable, "-m", "flows.cli"]
PREFECT = str(Path(sys.executable).parent / "prefect")
COMMIT_AS = ("-c", "user.email=t@escrag.invalid", "-c", "user.name=test")


def make_project(repo_root: Path, tmp: Path, params: dict[str, Any]) -> Path:
    """A committed copy with `params`, its DVC remote in tmp/dvcstore and `origin` a bare repo tmp/origin.git."""
    root = copy_project(repo_root, tmp / "project")
    set_params(root, params)
    remote = tmp / "dvcstore"
    subprocess.run([sys.executable, "-m", "dvc", "remote", "modify", "local", "url", str(remote)], cwd=root, check=True)
    git(root, *COMMIT_AS, "commit", "-qam", "tiny params, shared DVC remote")
    branch = git(root, "symbolic-ref", "--short", "HEAD").strip()
    git(tmp, "init", "-q", "--bare", f"--initial-branch={branch}", str(tmp / "origin.git"))
    git(root, "remote", "add", "origin", str(tmp / "origin.git"))
    git(root, "push", "-q", "-u", "origin", branch)
    return root


def clean_environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_TRACKING", "PREFECT_API", "ESCRAG_"))}
    env.pop("PREFECT_HOME", None)
    return {**env, **extra}


@dataclass
class Cluster:
    project: Path
    state: Path
    env: dict[str, str]
    pids: list[int] = field(default_factory=list)

    @property
    def api(self) -> str:
        return self.env["PREFECT_API_URL"]

    def run(self, *argv: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(argv, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {result.returncode}:\n{result.stderr[-4000:]}")
        return result

    def escrag(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(*ESCRAG, *args, check=check)

    def request(self, path: str, body: dict | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.api}{path}", data=data, method="POST" if body is not None else "GET",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def flow_runs(self, deployment: str) -> list[dict]:
        """The flow runs of `deployment` (e.g. retrain/retrain) that something started, oldest first;
        the runs its cron schedule has queued for later are left out."""
        deployment_id = self.request(f"/deployments/name/{deployment}")["id"]
        runs = self.request("/flow_runs/filter", {"deployments": {"id": {"any_": [deployment_id]}}})
        return sorted((r for r in runs if not r["auto_scheduled"]), key=lambda r: r["created"])

    def wait_for(self, predicate, timeout: float, what: str, every: float = 3.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if value := predicate():
                return value
            time.sleep(every)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def start_cluster(project: Path, state: Path, **env: str) -> Cluster:
    """`escrag services start` in `project`; the exported PREFECT_API_URL / MLFLOW_TRACKING_URI are returned."""
    base = clean_environment(PREFECT_HOME=str(state / "cli-prefect"), **env)
    result = subprocess.run(
        [*ESCRAG, "services", "start", "--state-dir", str(state)], cwd=project, env=base,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if result.returncode != 0:
        raise AssertionError(f"escrag services start failed:\n{result.stderr[-4000:]}")
    exports = dict(line.removeprefix("export ").split("=", 1) for line in result.stdout.splitlines())
    pids = [p["pid"] for p in json.loads((state / "services.json").read_text())["processes"]]
    return Cluster(project, state, {**base, **exports}, pids)


class WebhookReceiver:
    """A tiny HTTP endpoint that records every JSON POST it receives."""

    def __init__(self) -> None:
        received: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.received = received
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
