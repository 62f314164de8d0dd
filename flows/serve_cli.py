"""`escrag serve` and `escrag chat`: the registered champion over HTTP, and in a terminal.

Both use the one servable model the registry holds (tasks/policy_pyfunc.py): policy, guidance index at
its training version, embedder and safety layer. `escrag serve` is `mlflow models serve --env-manager
local` with the project's tracking store and this environment's tools on PATH; it prints the URL once
the server answers. `escrag chat` loads the same model in-process and keeps the conversation.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, project_from
from tasks.tracking import CHAMPION, POLICY_MODEL

DEFAULT_MODEL = f"models:/{POLICY_MODEL}@{CHAMPION}"
READY_TIMEOUT_S = 600  # the first load copies the model (0.6 GB) out of the artifact store
QUIT = ("/quit", "/exit")


def servable(model: str) -> str:
    """`model` when it names a servable escrag policy; raises UnknownModelError saying why not."""
    from mlflow.models import get_model_info

    from tasks.policy_pyfunc import POLICY
    from tasks.registry import UnknownModelError, run_of

    _, version = run_of(model)
    try:
        flavors = get_model_info(model).flavors
    except Exception as error:  # noqa: BLE001 - MLflow raises generic errors for missing MLmodel files
        raise UnknownModelError(f"{model}: no model files ({str(error)[:200]})") from None
    if POLICY not in flavors.get("python_function", {}).get("artifacts", {}):
        raise UnknownModelError(
            f"{model} (version {version}) is not servable: it was registered before serving was built, as a bare "
            "text-generation pipeline. Re-run `escrag run` to register a servable version."
        )
    return model


def wait_until_ready(url: str, process: subprocess.Popen, timeout: float = READY_TIMEOUT_S) -> bool:
    """Poll `url`/ping until it answers 200; False when the server exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/ping", timeout=2) as answer:
                if answer.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    return False


def serve_command(model: str, host: str, port: int, workers: int) -> list[str]:
    mlflow_cli = str(Path(sys.executable).with_name("mlflow"))
    return [mlflow_cli, "models", "serve", "-m", model, "--env-manager", "local", "-h", host, "-p", str(port),
            "--workers", str(workers)]  # fmt: skip


def serve_environment(tracking_uri: str) -> dict[str, str]:
    """This environment, with its bin folder first on PATH (mlflow starts `uvicorn` by name) and the
    project's tracking store, so `models:/` URIs resolve."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MLFLOW_TRACKING_URI"] = tracking_uri
    return env


def cmd_serve(args: argparse.Namespace) -> int:
    from tasks.registry import UnknownModelError
    from tasks.tracking import configure

    project = project_from(args)
    configure(project)
    try:
        model = servable(args.model)
    except UnknownModelError as error:
        print(f"escrag serve: MODEL {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    url = f"http://{args.host}:{args.port}"
    print(f"starting {model} on {url} ...", file=sys.stderr)
    # Its own process group: mlflow starts uvicorn as a child, and stopping escrag serve stops both.
    process = subprocess.Popen(  # the server's own log (access lines) goes to stderr; stdout carries the URL
        serve_command(model, args.host, args.port, args.workers),
        env=serve_environment(project.tracking_uri),
        stdout=sys.stderr,
        start_new_session=True,
    )
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        if not wait_until_ready(url, process):
            print(f"escrag serve: the server did not answer on {url}", file=sys.stderr)
            return EXIT_FAILED
        print(f"serving {model} at {url}/invocations", flush=True)
        return process.wait()
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        stop_group(process)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def stop_group(process: subprocess.Popen, grace_s: float = 20) -> None:
    """Stop the server and everything it started, even when mlflow itself has exited already (SIGTERM to the
    process group, then SIGKILL after `grace_s`)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def side_line(answer: dict[str, Any]) -> str:
    """Strategy, guidance titles and the safety layer's action, on one line."""
    safety = answer["safety"]
    guard = safety["action"] + (f" ({'; '.join(safety['reasons'])})" if safety["replaced"] else "")
    titles = "; ".join(answer["guidance_titles"]) or "none"
    return f"  [strategy: {answer['strategy']} | guidance: {titles} | safety: {guard}]"


def chat_loop(model: Any, situation: str, show_reasoning: bool, read=input, write=print) -> int:
    """Read seeker turns until /quit or end of input; answer each with the whole conversation so far."""
    from mlflow.exceptions import MlflowException

    turns: list[dict[str, str]] = []
    write("escrag chat: type your message; /reset starts over, /quit ends.")
    while True:
        try:
            text = read("you> ").strip()
        except EOFError:
            return EXIT_OK
        if text in QUIT:
            return EXIT_OK
        if text == "/reset" or not text:
            turns = [] if text else turns
            continue
        turns.append({"speaker": "seeker", "text": text})
        try:
            [answer] = model.predict(
                {"turns": turns, "situation": situation}, params={"show_reasoning": show_reasoning}
            )
        except MlflowException as error:  # a conversation the model refuses (tasks/policy_pyfunc.py)
            write(f"escrag: {error.message}")
            turns.pop()
            continue
        if show_reasoning:
            write(f"  <think> {answer['reasoning']}")
        write(f"escrag> {answer['reply']}")
        write(side_line(answer))
        turns.append({"speaker": "supporter", "text": answer["reply"]})


def once_turns(path: str) -> Any:
    """The conversation in a `--once` file; DataError naming the file and the turn when it is not one."""
    from models.responder import ConversationError, check_turns
    from tasks.jsonl_reader import DataError

    try:
        return check_turns(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(Path(path), 0, f"--once: not a readable JSON list of turns ({error})") from None
    except ConversationError as error:
        raise DataError(Path(path), 0, f"--once: {error}") from None


def quiet_chat(verbose: bool) -> None:
    """Keep the terminal for the conversation: no INFO lines, and no safety-layer warning (the side line
    already says what the layer did)."""
    if not verbose:
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("models.safety.layer").setLevel(logging.ERROR)


def cmd_chat(args: argparse.Namespace) -> int:
    import mlflow

    from tasks.registry import UnknownModelError
    from tasks.tracking import configure

    configure(project_from(args))
    turns = once_turns(args.once) if args.once else None  # a bad file fails before the model loads
    quiet_chat(args.verbose)
    try:
        model = mlflow.pyfunc.load_model(servable(args.model))
    except UnknownModelError as error:
        print(f"escrag chat: MODEL {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if turns is not None:  # one conversation from a JSON file, answered once: for scripts
        [answer] = model.predict(
            {"turns": turns, "situation": args.situation}, params={"show_reasoning": args.show_reasoning}
        )
        print(json.dumps(answer, indent=2))
        return EXIT_OK
    return chat_loop(model, args.situation, args.show_reasoning)


def add_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the champion over HTTP (mlflow models serve) and print the URL",
        description="Serve a registered policy with `mlflow models serve --env-manager local`. POST "
        '{"inputs": {"turns": [{"speaker": "seeker", "text": "..."}]}} to URL/invocations; the answer holds '
        "reply, strategy, guidance_ids and safety (docs/serving.md). Ctrl-C stops it.",
    )
    serve.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"a registered version or alias (default {DEFAULT_MODEL})"
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=5005, help="port (default 5005)")
    serve.add_argument("--workers", type=int, default=1, help="server processes, each holding the model (default 1)")
    serve.set_defaults(func=cmd_serve)

    chat = sub.add_parser(
        "chat",
        help="chat with the champion in the terminal (strategy and guidance in a side line)",
        description="A terminal chat with a registered policy, loaded in this process. Each reply passes the "
        "same safety layer as the server. /reset starts a new conversation, /quit (or Ctrl-D) ends.",
    )
    chat.add_argument("--model", default=DEFAULT_MODEL, help=f"a registered version or alias (default {DEFAULT_MODEL})")
    chat.add_argument("--situation", default="", help="what the seeker's situation is, if known (optional)")
    chat.add_argument("--show-reasoning", action="store_true", help="also print the <think> text (for developers)")
    chat.add_argument("--once", metavar="TURNS.json", help="answer the conversation in this JSON file once, as JSON")
    chat.set_defaults(func=cmd_chat)
