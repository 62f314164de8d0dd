"""tasks.health: the one probe and wait behind service start-up, the tracking preflight and the fault suite."""

from __future__ import annotations

import http.server
import threading

import pytest

from tasks.health import probe, wait_until_answers
from tasks.services import free_port


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, *args) -> None:  # keep the test output clean
        pass


def test_a_closed_port_raises_oserror_and_never_answers():
    url = f"http://127.0.0.1:{free_port()}/health"
    with pytest.raises(OSError):
        probe(url, timeout_s=1)
    assert not wait_until_answers(url, timeout_s=1.5)


def test_waiting_stops_at_once_when_the_process_is_gone():
    asked = []

    def gone() -> bool:
        asked.append(True)
        return False

    assert not wait_until_answers(f"http://127.0.0.1:{free_port()}/health", timeout_s=60, alive=gone)
    assert len(asked) == 1  # asked once, before any probe: no waiting on a process that has exited


def test_a_server_that_starts_listening_late_is_waited_for():
    port = free_port()
    started: list[http.server.HTTPServer] = []

    def start() -> None:  # nothing listens on the port until now: the first probes are refused
        started.append(http.server.HTTPServer(("127.0.0.1", port), _Health))
        started[0].serve_forever()

    threading.Timer(1.0, start).start()
    try:
        assert wait_until_answers(f"http://127.0.0.1:{port}/health", timeout_s=30)
        probe(f"http://127.0.0.1:{port}/health", timeout_s=2)
    finally:
        if started:
            started[0].shutdown()
            started[0].server_close()
