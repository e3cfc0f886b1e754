"""Raw-socket clients for the HTTP limit tests: half-open requests and trickled bytes."""

from __future__ import annotations

import socket

from squall.runtime.clock import SimulatedClock


def half_open(host: str, port: int, first: bytes) -> socket.socket:
    """A connection that sent ``first`` (a request's beginning) and nothing more."""
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(first)
    return s


def cut_while_trickling(s: socket.socket, clock: SimulatedClock, rounds: int = 10) -> bool:
    """Send one header byte per round, each after moving the simulated clock past any deadline;
    True once the server closes the connection, False if it is still open after ``rounds``."""
    s.settimeout(0.5)
    for _ in range(rounds):
        clock.advance(31.0)
        try:
            s.sendall(b"a")
            if s.recv(4096) == b"":
                return True
        except TimeoutError:
            continue  # no answer yet: the server still waits for the rest of the request
        except ConnectionError:
            return True
    return False


def answer(s: socket.socket, timeout: float = 10.0) -> bytes:
    """Whatever the server sends until it closes or goes quiet (empty if nothing came)."""
    s.settimeout(timeout)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            s.settimeout(0.5)
    except (TimeoutError, ConnectionError):
        pass
    return out
