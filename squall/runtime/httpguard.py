"""Limits every squall HTTP server applies: a whole-request deadline, a connection cap, Host names.

Nimbus's API and web UI and the DRPC server use stdlib's ``ThreadingHTTPServer``, which
gives each connection a thread and bounds only each ``recv``. So that no client ties a
server up:

- ``DeadlineHandler`` gives each request one deadline (``timeout`` seconds from its first
  byte awaited, on ``squall.runtime.clock``): request line, headers and body must all
  arrive by then, however slowly the bytes trickle in; the connection is cut otherwise.
- ``GuardedHTTPServer`` serves at most ``max_connections`` connections at once; one more
  gets ``503`` and is closed at once, without a thread.
- ``host_allowed`` checks a request's ``Host`` against the names of the bound address, so
  that a web page whose own name was rebound to the server's address (DNS rebinding)
  cannot read it through the operator's browser.
"""

from __future__ import annotations

import io
import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from squall.runtime import clock

log = logging.getLogger("squall.http")
DEFAULT_MAX_CONNECTIONS = 64
LOG_EVERY_SECS = 10.0  # refused connections are logged at most this often
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
         b"Content-Length: 70\r\n\r\n"
         b'{"error": "too many connections at once; retry later", "code": "busy"}')


class _DeadlineReader(io.RawIOBase):
    """A socket's reading side that refuses to wait past its handler's deadline."""

    def __init__(self, sock: socket.socket, handler: DeadlineHandler) -> None:
        self.sock = sock
        self.handler = handler

    def readable(self) -> bool:
        """Always: the socket's reading side."""
        return True

    def readinto(self, buffer: Any) -> int:
        """One ``recv`` into ``buffer``, waiting no longer than the request's deadline allows."""
        left = self.handler.deadline - clock.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive whole within its deadline")
        self.sock.settimeout(min(left, float(self.handler.timeout or left)))
        try:
            return self.sock.recv_into(buffer)
        finally:  # writes (the answer, after a long operation) get the whole timeout again
            self.sock.settimeout(self.handler.timeout)


class DeadlineHandler(BaseHTTPRequestHandler):
    """A handler whose every request must arrive whole within ``timeout`` seconds (see the module)."""

    timeout = 30.0
    deadline = float("inf")

    def setup(self) -> None:
        """The stdlib's setup, with the request's reads going through the deadline."""
        super().setup()
        self.rfile.close()  # the stdlib's reader: left open, it would hold the socket's descriptor
        size = max(self.rbufsize, io.DEFAULT_BUFFER_SIZE)
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self), size)

    def handle_one_request(self) -> None:
        """One request, under a deadline of its own."""
        # each request on a kept-alive connection gets its own deadline, the wait for it included
        self.deadline = clock.monotonic() + float(self.timeout or 0) if self.timeout else float("inf")
        super().handle_one_request()


class GuardedHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with at most ``max_connections`` connections served at once."""

    daemon_threads = True
    # the stdlib's listen backlog of 5 drops a burst's SYNs, and each dropped one waits 1 s
    # for its retry: 100 connections took 15 s to open on a loaded host, with 128 none
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        super().__init__(address, handler)
        self.set_max_connections(max_connections)

    def set_max_connections(self, n: int) -> None:
        """Cap the connections served at once (new connections only)."""
        if n < 1:
            raise ValueError(f"max_connections must be at least 1, got {n}")
        self.max_connections = n
        self._slots = threading.BoundedSemaphore(n)
        self.refused = 0  # connections turned away with 503, in all
        self._refused_logged = (0, -LOG_EVERY_SECS)  # (count, time) of the last warning

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on a thread of its own; refuse it with 503 when every slot is taken."""
        slots = self._slots
        if not slots.acquire(blocking=False):
            self.refused += 1
            count, when = self._refused_logged
            now = time.monotonic()
            if now - when >= LOG_EVERY_SECS:  # a flood of refusals must not flood the log too
                log.warning("http: %d connection(s) refused (latest from %s): %d already open",
                            self.refused - count, client_address[0], self.max_connections)
                self._refused_logged = (self.refused, now)
            try:
                request.settimeout(0)
                request.send(_BUSY)  # fits the socket's buffer; never waits on the client
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            thread = threading.Thread(target=self._serve, args=(request, client_address, slots),
                                      daemon=True)
            thread.start()
        except Exception:  # no thread: none will release the slot or close the connection
            slots.release()
            self.shutdown_request(request)
            raise
        # A KeyboardInterrupt from a signal handler may come inside ``start`` after the thread
        # began: that thread owns the slot then. Releasing it here too raised ValueError
        # (released too many times), which socketserver logs and swallows, so the interrupt
        # meant to stop the server was lost and it went on serving.

    def _serve(self, request: Any, client_address: Any, slots: threading.BoundedSemaphore) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            slots.release()


def host_names(bound: str, *, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` names a server bound to ``bound`` answers.

    That address, the loopback names for a loopback bind, this host's names for a bind to
    every address, and ``extra`` (names or URLs: ``nimbus.url``, an allow-list; ``*``
    answers any name).
    """
    names = {_hostname(bound)}
    if _loopback(bound):
        names |= LOOPBACK_NAMES
    if _wildcard(bound):  # every address of this host: its own names too
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    for item in extra:
        item = item.strip()
        if item:
            names.add(_hostname(item.split("://", 1)[1] if "://" in item else item))
    names.discard("")
    return frozenset(names)


def host_allowed(header: str | None, names: frozenset[str], bound: str) -> bool:
    """True if a request's ``Host`` header names this server (see ``host_names``).

    No header at all (HTTP/1.0 tools) passes: browsers always send one. A server bound to
    every address (``0.0.0.0``, ``::``) also answers any IP address: rebinding needs a name.
    """
    if header is None:
        return True
    host = _hostname(header)
    if host in names or "*" in names:
        return True
    return _wildcard(bound) and _is_ip(host)


def _hostname(value: str) -> str:
    """``value`` (``host``, ``host:port``, ``[v6]:port``, ``host/path``) as a lower-case host."""
    value = value.strip().split("/", 1)[0].lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _loopback(host: str) -> bool:
    h = _hostname(host)
    if h in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _wildcard(host: str) -> bool:
    return _hostname(host) in ("", "0.0.0.0", "::")
