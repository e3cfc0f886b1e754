"""Security second pass, finding 6: a slow client cannot hold a Nimbus thread; connections are capped.

Nimbus's ``nimbus.http.timeout.secs`` bounded each ``recv``: a client sending one byte
every few seconds held its thread for ever, and every connection got a thread. Now the
whole request (line, headers, body) has one deadline, on ``squall.runtime.clock`` (so the
test moves simulated time), and at most ``nimbus.http.max.connections`` (64) are served at
once; one more gets 503 at once.
"""

from __future__ import annotations

from squall.testing import simulated_time
from tests.security.inproc import InProcNimbus
from tests.security.slowclient import answer, cut_while_trickling, half_open

DEFAULT_MAX_CONNECTIONS = 64  # nimbus.http.max.connections


def test_a_trickling_client_is_cut_at_the_request_deadline(tmp_path):
    with simulated_time() as clock, InProcNimbus(tmp_path, timeout=30.0) as n:
        s = half_open(n.host, n.port, b"GET /api/v1/health HTTP/1.1\r\nX-Pad: ")
        try:
            assert cut_while_trickling(s, clock), "the connection was still open after 10 deadlines"
        finally:
            s.close()
        assert n.get("/api/v1/health")[0] == 200  # and the server still serves


def test_connections_over_the_cap_get_503_at_once(tmp_path):
    with InProcNimbus(tmp_path) as n:
        held = [half_open(n.host, n.port, b"GET /api/v1/health HTTP/1.1\r\n")
                for _ in range(DEFAULT_MAX_CONNECTIONS)]
        try:
            extra = half_open(n.host, n.port, b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            reply = answer(extra)
            extra.close()
            assert reply.startswith(b"HTTP/1.1 503"), reply[:200]
        finally:
            for s in held:
                s.close()
        status = 0
        for _ in range(100):  # the held connections' threads end as their sockets close
            status, _ = n.get("/api/v1/health")
            if status == 200:
                break
        assert status == 200
