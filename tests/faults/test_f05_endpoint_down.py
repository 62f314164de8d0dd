"""Fault 5: the judge/LLM endpoint of `preferences build` (the HTTP backend) goes down mid-build. The build
retries with back-off, then fails naming the endpoint; once it is back, a re-run pays no answered request
twice (the response cache) and writes the very pairs of an uninterrupted build."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from models.backends import BackendUnavailableError
from tasks.esc_preferences import run_builder
from tests.integration.test_http_backend import FakeChat

SETTINGS = {"backend": "http", "situations": 3, "turns": 1, "candidates": 2, "min_margin": 1.0}


class CountingChat(FakeChat):
    """FakeChat that counts the requests it answers and, past `limit`, drops the connection and shuts down."""

    answered = 0
    limit: int | None = None

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        if type(self).limit is not None and type(self).answered >= type(self).limit:
            self.close_connection = True
            threading.Thread(target=lambda: (self.server.shutdown(), self.server.server_close())).start()
            return
        type(self).answered += 1
        super().do_POST()


def serve(port: int = 0) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", port), CountingChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def builder_project(root: Path, repo_root: Path) -> str:
    (root / "data" / "dialogues").mkdir(parents=True)
    shutil.copy(repo_root / "params.yaml", root / "params.yaml")
    shutil.copy(repo_root / "starter_data" / "dialogues" / "dialogues.jsonl", root / "data" / "dialogues")
    return str(root)


def pairs_of(result: dict) -> list[dict]:
    return [json.loads(line) for line in Path(result["out"]).read_text().splitlines()]


def test_endpoint_down_mid_build_then_back_pays_nothing_twice(tmp_path, repo_root, monkeypatch, fault):
    row = fault(5, "LLM/judge endpoint down mid `preferences build`", "retries, fails naming the URL; re-run pays "
                "no answered request twice; pairs equal an uninterrupted build")  # fmt: skip
    FakeChat.plan, FakeChat.seen = [], []
    CountingChat.answered, CountingChat.limit = 0, None
    httpd = serve()
    port = httpd.server_address[1]
    monkeypatch.setenv("ESCRAG_LLM_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("ESCRAG_LLM_MODEL", "fake-model")
    reference = pairs_of(run_builder(builder_project(tmp_path / "reference", repo_root), SETTINGS))
    uninterrupted = CountingChat.answered
    assert reference and uninterrupted > 4

    CountingChat.answered, CountingChat.limit = 0, uninterrupted // 2
    project = builder_project(tmp_path / "interrupted", repo_root)
    with pytest.raises(BackendUnavailableError) as down:
        run_builder(project, SETTINGS)
    before_outage = CountingChat.answered
    assert f"127.0.0.1:{port}" in str(down.value) and "unavailable after" in str(down.value)

    CountingChat.answered, CountingChat.limit = 0, None
    httpd = serve(port)  # the endpoint is back, on the same address
    try:
        resumed = run_builder(project, SETTINGS)
    finally:
        httpd.shutdown()
        httpd.server_close()
    total = before_outage + CountingChat.answered
    row.did = (f"failed after {before_outage} answers and 3 retries ({str(down.value)[:60]}...); re-run asked "
               f"{CountingChat.answered} more: {total} of an uninterrupted build's {uninterrupted}")  # fmt: skip
    assert total == uninterrupted, "no answered request was paid twice"
    assert pairs_of(resumed) == reference
