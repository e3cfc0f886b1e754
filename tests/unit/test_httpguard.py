"""squall.runtime.httpguard: a signal's KeyboardInterrupt that lands while a connection's
thread starts must reach the serving loop (it was turned into a swallowed ValueError)."""

from __future__ import annotations

import socket
import threading
from types import SimpleNamespace

import pytest

from squall.runtime import httpguard
from squall.runtime.httpguard import DeadlineHandler, GuardedHTTPServer


class Hello(DeadlineHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"hi")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


class InterruptedStart(threading.Thread):
    """Raises KeyboardInterrupt from ``start`` once the thread has run, as a signal handler can
    (on a loaded host the new thread may serve its request before ``start`` returns)."""

    def start(self) -> None:
        super().start()
        self.join(10)
        raise KeyboardInterrupt


def test_an_interrupt_inside_a_connection_threads_start_reaches_the_loop(monkeypatch):
    server = GuardedHTTPServer(("127.0.0.1", 0), Hello, max_connections=1)
    try:
        monkeypatch.setattr(httpguard, "threading", SimpleNamespace(
            Thread=InterruptedStart, BoundedSemaphore=threading.BoundedSemaphore))
        with socket.create_connection(server.server_address, timeout=10) as client:
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            request, address = server.get_request()
            # socketserver swallows an Exception from process_request (handle_error), not this
            with pytest.raises(KeyboardInterrupt):
                server.process_request(request, address)
            # the thread that began owned the slot and the connection: it answered, and its
            # slot is free again (released once: a BoundedSemaphore refuses a second release)
            assert client.recv(1024).startswith(b"HTTP/1.1 200 ")
            assert server._slots.acquire(blocking=False)
    finally:
        server.server_close()
