"""The OpenAI-compatible HTTP backend against a real http.server on 127.0.0.1, and the roles on top of it."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from models.backends import BackendError, BackendUnavailableError, HttpChatBackend, http_backend_from_env
from models.roles import build_preference_pairs, parse_judgement

MESSAGES = [{"role": "user", "content": "hello"}]


class FakeChat(BaseHTTPRequestHandler):
    """Answers like a chat-completions server; `plan` (status codes or 'slow') is consumed per request."""

    plan: list = []
    seen: list = []

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        step = type(self).plan.pop(0) if type(self).plan else 200
        if step == "slow":
            time.sleep(0.5)
            step = 200
        if step != 200:
            self.send_response(step)
            self.end_headers()
            self.wfile.write(b'{"error": "nope"}')
            return
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer(body)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        # after a 'slow' step the client has timed out and gone: nothing to answer
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


def answer(body: dict) -> str:
    """Plays the three roles by their system prompt; the judge likes replies that say sorry."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    last = body["messages"][-1]["content"]
    if system.startswith("You compare two"):  # the pairwise judge: prefers the reply that says sorry
        reply_a, reply_b = last.split("Reply A:\n", 1)[1].split("\n\nReply B:\n")
        verdict = "A" if "sorry" in reply_a else "B" if "sorry" in reply_b else "tie"
        return json.dumps({"better": verdict, "rationale": "warmer"})
    if system.startswith("You rate"):
        reply = last.rsplit("Counselor reply:", 1)[-1]
        return json.dumps({"score": 5 if "sorry" in reply else 2, "rationale": "warm" if "sorry" in reply else "cold"})
    if system.startswith("You are role-playing"):
        return "I lost my job and I feel ashamed."
    if system.startswith("You are a warm"):
        return "I'm so sorry. What happened?" if "Candidate 1" in last else "Just move on."
    return f"echo: {last}"


@pytest.fixture()
def server() -> Iterator[str]:
    FakeChat.plan, FakeChat.seen = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def backend(url: str, tmp_path: Path | None = None, **kwargs) -> tuple[HttpChatBackend, list[float]]:
    sleeps: list[float] = []
    settings = {"api_key": "k-123", "timeout": 5.0, "retries": 2, "backoff": 0.5, **kwargs}
    return HttpChatBackend(url, "fake-model", cache_dir=tmp_path, sleep=sleeps.append, **settings), sleeps


def test_posts_chat_completions_with_model_and_key(server: str) -> None:
    chat, _ = backend(server)
    assert chat.complete(MESSAGES, max_tokens=7, temperature=0.0) == "echo: hello"
    (request,) = FakeChat.seen
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-123"
    assert request["body"] == {"model": "fake-model", "messages": MESSAGES, "max_tokens": 7, "temperature": 0.0}


def test_retries_5xx_and_429_with_exponential_backoff(server: str) -> None:
    FakeChat.plan = [503, 429]
    chat, sleeps = backend(server)
    assert chat.complete(MESSAGES) == "echo: hello"
    assert chat.requests == 3 and sleeps == [0.5, 1.0]


def test_client_errors_fail_at_once(server: str) -> None:
    FakeChat.plan = [401]
    chat, sleeps = backend(server)
    with pytest.raises(BackendError, match="HTTP 401") as err:
        chat.complete(MESSAGES)
    assert not isinstance(err.value, BackendUnavailableError) and chat.requests == 1 and sleeps == []


def test_timeouts_are_retried_then_reported(server: str) -> None:
    FakeChat.plan = ["slow", "slow", "slow"]
    chat, sleeps = backend(server, timeout=0.1)
    with pytest.raises(BackendUnavailableError, match="unavailable after 3 attempts"):
        chat.complete(MESSAGES)
    assert len(sleeps) == 2


def test_server_down_is_a_clear_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    chat, sleeps = backend(f"http://127.0.0.1:{port}/v1", retries=1)
    with pytest.raises(BackendUnavailableError) as err:
        chat.complete(MESSAGES)
    assert f"127.0.0.1:{port}/v1/chat/completions" in str(err.value) and "ESCRAG_LLM_URL" in str(err.value)
    assert sleeps == [0.5]


def test_answers_are_cached_by_prompt_hash(server: str, tmp_path: Path) -> None:
    chat, _ = backend(server, tmp_path)
    first = chat.complete(MESSAGES)
    assert chat.complete(MESSAGES) == first and len(FakeChat.seen) == 1
    chat.complete(MESSAGES, temperature=0.1)  # a different prompt setting is a different key
    assert len(FakeChat.seen) == 2
    fresh, _ = backend(server, tmp_path)
    assert fresh.complete(MESSAGES) == first and fresh.cache.hits == 1 and len(FakeChat.seen) == 2


def test_settings_from_environment(server: str) -> None:
    with pytest.raises(BackendError, match="ESCRAG_LLM_URL"):
        http_backend_from_env(env={})
    chat = http_backend_from_env(env={"ESCRAG_LLM_URL": server, "ESCRAG_LLM_MODEL": "m", "OPENAI_API_KEY": "k"})
    assert chat.api_key == "k" and chat.timeout == 60.0 and chat.url == f"{server}/chat/completions"
    with pytest.raises(BackendError, match="ESCRAG_LLM_TIMEOUT"):
        http_backend_from_env(env={"ESCRAG_LLM_URL": server, "ESCRAG_LLM_MODEL": "m", "ESCRAG_LLM_TIMEOUT": "soon"})


def test_roles_build_a_preference_pair_over_http(server: str, tmp_path: Path) -> None:
    chat, _ = backend(server, tmp_path)
    pairs = build_preference_pairs(
        "Laid off after eight years.",
        client=chat,
        counselor=chat,
        judge_backend=chat,
        conversation_id="c1",
        turns=2,
        candidates=2,
    )
    assert len(pairs) == 2
    first = pairs[0]
    assert first["chosen"] == "I'm so sorry. What happened?" and first["rejected"] == "Just move on."
    assert first["scores"] == {"chosen": 5.0, "rejected": 2.0} and first["context"][-1]["speaker"] == "seeker"
    assert [t["speaker"] for t in pairs[1]["context"]] == ["seeker", "supporter", "seeker"]


def test_builder_writes_pairs_for_project_situations(server: str, tmp_path: Path, repo_root: Path, monkeypatch) -> None:
    from tasks.esc_preferences import run_builder

    (tmp_path / "params.yaml").write_text((repo_root / "params.yaml").read_text())
    (tmp_path / "data" / "dialogues").mkdir(parents=True)
    dialogue = {"id": "d1", "situation": "Laid off.", "turns": [], "split": "train"}
    (tmp_path / "data" / "dialogues" / "d.jsonl").write_text(json.dumps(dialogue) + "\n")
    monkeypatch.setenv("ESCRAG_LLM_URL", server)
    monkeypatch.setenv("ESCRAG_LLM_MODEL", "fake-model")
    settings = {"backend": "http", "situations": 3, "turns": 1, "candidates": 2, "min_margin": 1.0}
    result = run_builder(str(tmp_path), settings)
    lines = Path(result["out"]).read_text().splitlines()
    assert result["situations"] == 1 and result["pairs"] == len(lines) == 1
    assert json.loads(lines[0])["id"].startswith("escpref-")
    again = run_builder(str(tmp_path), settings)
    assert again["cache_hits"] > 0


@pytest.mark.parametrize(
    ("text", "score"),
    [('{"score": 4, "rationale": "ok"}', 4.0), ("Score: 3 - generic", 3.0), ("I give it 2/5.", 2.0), ("great", None)],
)
def test_judge_answers_are_parsed(text: str, score: float | None) -> None:
    assert parse_judgement(text).score == score


def test_pairwise_judge_over_http_asks_both_orders(server: str) -> None:
    from models.pairwise_judge import judge_pairs

    client, _ = backend(server)
    examples = [{"stage": "Comforting", "context_text": "Seeker: I failed my exam."}] * 3
    warm, cold = ["I'm so sorry, that hurts.", "Okay.", "I'm sorry."], ["Okay.", "I'm so sorry.", "I'm sorry too."]
    judged = judge_pairs(client, examples, warm, cold)
    assert [j.outcome for j in judged] == [1.0, 0.0, 0.5]
    assert judged[0].verdicts == ("A", "B")  # the same reply won in both positions
    assert len(FakeChat.seen) == 6 and FakeChat.seen[0]["body"]["temperature"] == 0.0
