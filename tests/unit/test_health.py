"""tasks.health: the one probe and wait behind service start-up, the tracking preflight and the fault suite."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from tasks.health import probe, wait_until_answers


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, *args) -> None:  # keep the test output clean
        pass


def test_a_closed_port_raises_oserror_and_never_answers():
    url = f"http://127.0.0.1:{_free_port()}/health"
    with pytest.raises(OSError):
        probe(url, timeout_s=1)
    assert not wait_until_answers(url, timeout_s=1.5)


def test_waiting_stops_at_once_when_the_process_is_gone():
    started = time.monotonic()
    assert not wait_until_answers(f"http://127.0.0.1:{_free_port()}/health", timeout_s=60, alive=lambda: False)
    assert time.monotonic() - started < 5


def test_a_server_that_comes_up_late_is_waited_for():
    port = _free_port()
    server = http.server.HTTPServer(("127.0.0.1", port), _Health)
    threading.Timer(1.0, server.serve_forever).start()
    try:
        assert wait_until_answers(f"http://127.0.0.1:{port}/health", timeout_s=30)
        probe(f"http://127.0.0.1:{port}/health", timeout_s=2)
    finally:
        server.shutdown()
        server.server_close()
