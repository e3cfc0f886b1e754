"""Security second pass, finding 3: the DRPC server's limits.

It set no socket timeout, so any client, without the token, could pin one thread per
half-open connection, with no limit; a negative ``Content-Length`` read to EOF; any
non-empty token was accepted. Now: a whole-request deadline (simulated time here), a cap on
connections, the token checked before the body, a malformed length refused with 400, and
tokens of at least 16 characters.
"""

from __future__ import annotations

import json

import pytest

from squall.drpc.server import DRPCServer
from squall.testing import simulated_time
from tests.security.slowclient import answer, cut_while_trickling, half_open

TOKEN = "drpc-limits-token-0123456789"


def request(length: str, body: bytes = b"{}", token: str | None = TOKEN) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST /drpc/fetch HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode() + body


def test_a_half_open_request_without_the_token_is_cut_at_the_deadline():
    with simulated_time() as clock, DRPCServer(TOKEN, port=0) as srv:
        s = half_open(srv.host, srv.port, b"POST /drpc/execute HTTP/1.1\r\nX-Pad: ")
        try:
            assert cut_while_trickling(s, clock), "the connection was still open after 10 deadlines"
        finally:
            s.close()


def test_connections_are_capped():
    with DRPCServer(TOKEN, port=0, max_connections=4) as srv:
        held = [half_open(srv.host, srv.port, b"POST /drpc/execute HTTP/1.1\r\n") for _ in range(4)]
        try:
            extra = half_open(srv.host, srv.port, request("2"))
            reply = answer(extra)
            extra.close()
            assert reply.startswith(b"HTTP/1.1 503"), reply[:200]
        finally:
            for s in held:
                s.close()


@pytest.mark.parametrize("length", ["-1", "abc", "+5", "1e3", "5, 5"])
def test_a_malformed_content_length_is_400_without_reading(length):
    with DRPCServer(TOKEN, port=0) as srv:
        s = half_open(srv.host, srv.port, request(length))  # the connection stays open: no EOF
        try:
            reply = answer(s)
        finally:
            s.close()
        assert reply.startswith(b"HTTP/1.1 400"), (length, reply[:200])
        assert b"Content-Length" in reply


def test_the_token_is_checked_before_the_body_is_read():
    with DRPCServer(TOKEN, port=0) as srv:
        s = half_open(srv.host, srv.port, request("1000", b"", token="wrong-token-0123456789"))
        try:
            reply = answer(s)  # 1000 bytes announced, none sent: answered at once all the same
        finally:
            s.close()
        assert reply.startswith(b"HTTP/1.1 401"), reply[:200]
        body = b'{"function": "f"}'
        s = half_open(srv.host, srv.port, request(str(len(body)), body))
        try:
            reply = answer(s)
        finally:
            s.close()
        assert reply.startswith(b"HTTP/1.1 200") and json.loads(reply.split(b"\r\n\r\n", 1)[1]) == \
            {"id": "", "args": ""}


def test_a_short_token_is_refused_with_one_line():
    with pytest.raises(ValueError, match="at least 16 characters, got 5$"):
        DRPCServer("short", port=0)
