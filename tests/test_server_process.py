"""The helper that starts the tests' real servers: waits for readiness, fails with the log."""

from __future__ import annotations

import socket
import sys

import pytest

from tests.redis_server import free_port
from tests.server_process import start_server, stop_process


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_returns_once_the_server_answers_and_stops_it(tmp_path):
    port = free_port()
    proc = start_server([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                        tmp_path / "http.log", lambda: answers(port), what="no http.server", timeout=30)
    try:
        assert answers(port) and proc.poll() is None
    finally:
        stop_process(proc, 10.0)
    assert proc.returncode is not None and not answers(port)


def test_a_server_that_exits_fails_the_test_with_its_log(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=r"(?s)the server exited.*no config here"):
        start_server([sys.executable, "-c", "import sys; print('no config here'); sys.exit(3)"],
                     tmp_path / "x.log", lambda: False, what="the server exited", timeout=30)
