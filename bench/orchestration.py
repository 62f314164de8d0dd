"""Server mode against in-process, on the same tiny retrain: what the Prefect server, the workers and the
git + DVC + MLflow-server handoffs cost.

Each mode starts from its own fresh copy of the project (tiny random policy, TINY_RUN params), so every
stage runs in both:
- in-process: `escrag run` with no server (temporary Prefect API, SQLite MLflow), the `make run` path;
- server: `escrag services start` (timed apart: once per cluster), `prefect deploy`, then a `retrain` flow
  run started through the API; timed from the request until the run is Completed (worker pick-up, clones,
  pulls, pushes and the two training subflows included).
Run alone: the machine has 2 cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.integration.cluster import ESCRAG, PREFECT, clean_environment, make_project, start_cluster  # noqa: E402
from tests.integration.tiny_models import TINY_RUN, save_tiny_policy  # noqa: E402


def _project(tmp: Path, tiny: Path) -> Path:
    return make_project(REPO, tmp, {**TINY_RUN, "base_model": {"source": str(tiny)}})


def in_process(tmp: Path, tiny: Path) -> float:
    project = _project(tmp, tiny)
    started = time.perf_counter()
    subprocess.run([*ESCRAG, "run"], cwd=project, env=clean_environment(), check=True, capture_output=True)
    return time.perf_counter() - started


def _terminal(cluster, run_id: str) -> str | None:
    state = cluster.request(f"/flow_runs/{run_id}")["state_type"]
    return state if state in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"} else None


def _show_logs(folder: Path, lines: int = 40) -> None:
    for log in sorted(folder.glob("worker-*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        print(f"--- {log.name} (last {lines} lines)", *tail, sep="\n", file=sys.stderr)


def server(tmp: Path, tiny: Path) -> tuple[float, float]:
    project = _project(tmp, tiny)
    started = time.perf_counter()
    cluster = start_cluster(project, tmp / "services")
    startup = time.perf_counter() - started
    try:
        cluster.run(PREFECT, "--no-prompt", "deploy", "--all")
        deployment = cluster.request("/deployments/name/retrain/retrain")["id"]
        started = time.perf_counter()
        run = cluster.request(f"/deployments/{deployment}/create_flow_run", {"parameters": {}})
        state = cluster.wait_for(lambda: _terminal(cluster, run["id"]), 1800, "the retrain", every=1.0)
        if state != "COMPLETED":
            _show_logs(cluster.state / "logs")  # the temporary folder is gone once we exit
            raise SystemExit(f"server-mode retrain ended {state}")
        return time.perf_counter() - started, startup
    finally:
        cluster.run(*ESCRAG, "services", "stop", "--state-dir", str(cluster.state), check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1, help="alternating pairs of runs (default 1)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="escrag-bench-orch-") as tmp_dir:
        tmp = Path(tmp_dir)
        tiny = save_tiny_policy(tmp / "tiny-policy")
        for i in range(args.repeats):
            local = in_process(tmp / f"local-{i}", tiny)
            remote, startup = server(tmp / f"server-{i}", tiny)
            rows.append({"in_process_s": local, "server_s": remote, "services_start_s": startup})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'pair':>4} {'in-process s':>13} {'server s':>9} {'ratio':>6} {'services start s':>17}")
    for i, r in enumerate(rows):
        ratio = r["server_s"] / r["in_process_s"]
        print(f"{i:>4} {r['in_process_s']:>13.1f} {r['server_s']:>9.1f} {ratio:>5.2f}x {r['services_start_s']:>17.1f}")


if __name__ == "__main__":
    main()
