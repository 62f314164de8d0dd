"""Serving latency: the served champion over HTTP against the same policy's `generate` called in-process.

Run (after `make run`, from the project folder):
    .venv/bin/python bench/serve.py [--model models:/escrag-policy@champion] [--requests 20] [--url URL]

Without --url it starts `escrag serve` on a free port and stops it at the end. For each of N conversations
from the project's eval split it times, the three paths in turn:
  http       POST /invocations: schema checks, retrieval, prompt, generation, safety layer, JSON;
  pyfunc     the same model's predict in this process (no HTTP);
  generate   the policy's generate alone on the very prompt the server built, with the same seed.
The same seed and prompt give the same tokens on every path; the table says on how many they matched,
so the ratio compares equal work. `paired p50` is the median of each conversation's own ratio. Replies
are not streamed, so there is no time-to-first-token column.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flows.serve_cli import DEFAULT_MODEL, stop_group, wait_until_ready  # noqa: E402
from models.dialogue import contexts_for_training  # noqa: E402
from models.records import dialogues_of_split  # noqa: E402
from tasks.project import Project  # noqa: E402

MAX_TURNS = 5
PAUSE_S = 0.5  # before each timed call, for the other process's threads to go idle


def conversations(project: Project, n: int) -> list[list[dict]]:
    """N conversations of up to MAX_TURNS turns ending on a seeker turn, one per eval-split dialogue."""
    found = []
    for dialogue in dialogues_of_split(project.data, "eval"):
        contexts = [c for c in contexts_for_training(dialogue) if 3 <= len(c) <= MAX_TURNS]
        if contexts:
            found.append([{"speaker": t["speaker"], "text": t["text"]} for t in contexts[-1]])
        if len(found) == n:
            break
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, turns: list[dict]) -> dict:
    body = json.dumps({"inputs": {"turns": turns}, "params": {"show_reasoning": True}}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.loads(answer.read())["predictions"][0]


def timed(call):  # noqa: ANN001, ANN201
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def start_server(project: Project, model: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    args = [sys.executable, "-m", "flows.cli", "--project", str(project.root), "serve", "--model", model,
            "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(  # its own session, so stop_group reaches mlflow and uvicorn too
        args, cwd=project.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    if not wait_until_ready(url, server):
        stop_group(server)
        raise SystemExit(f"bench/serve.py: the server did not start on {url}")
    return server, url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project folder (default: here)")
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"registered model (default {DEFAULT_MODEL})")
    parser.add_argument("--requests", type=int, default=20, help="conversations timed on each path (default 20)")
    parser.add_argument("--url", help="a running server (default: start `escrag serve` for the run)")
    args = parser.parse_args()

    import mlflow
    import torch

    from models.training_data import prompt_for
    from tasks.tracking import configure

    project = Project.discover(args.project)
    configure(project)
    server, url = (None, args.url.rstrip("/")) if args.url else start_server(project, args.model)
    try:
        responder = mlflow.pyfunc.load_model(args.model).unwrap_python_model().responder
        policy = responder.policy  # the served model's own policy, loaded in this process
        cases = conversations(project, args.requests)
        post(f"{url}/invocations", cases[0])  # warm-up of every path
        responder.respond(cases[0])
        # The paths take turns on each conversation, so drift of the machine falls on all three alike, with
        # a pause before each timed call: the other process's OpenMP threads spin on for a while after their
        # work (about 200 ms) and would steal the 2 cores.
        rows: dict[str, list[float]] = {"http": [], "pyfunc": [], "generate": []}
        same = 0
        for turns in cases:
            prompt = prompt_for(turns, "", responder.search, policy.tokenizer, responder.k)[0]
            calls = {
                "http": lambda t=turns: post(f"{url}/invocations", t),
                "pyfunc": lambda t=turns: responder.respond(t),
                "generate": lambda p=prompt: policy.complete_seeded(p, responder.max_new_tokens, responder.seed),
            }
            results = {}
            for name, call in calls.items():
                time.sleep(PAUSE_S)
                seconds, results[name] = timed(call)
                rows[name].append(seconds)
            same += results["http"]["reasoning"] in results["generate"]
    finally:
        if server is not None:
            stop_group(server)
    base = statistics.median(rows["generate"])
    print(
        f"{len(cases)} conversations, at most {responder.max_new_tokens} new tokens, {torch.get_num_threads()} "
        f"torch threads; the server's completion equalled the direct one in {same}/{len(cases)}"
    )
    print(f"{'path':10} {'p50 s':>8} {'p95 s':>8} {'p50 / generate':>15} {'paired p50':>11}")
    for name, values in rows.items():
        median = statistics.median(values)
        paired = statistics.median(v / g for v, g in zip(values, rows["generate"], strict=True))
        print(f"{name:10} {median:8.3f} {p95(values):8.3f} {median / base:15.3f} {paired:11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
