"""The topology master's control endpoint (squall/spark/control.py) has the HTTP guard of the others.

It served with the plain stdlib server: no whole-request deadline, no cap on connections,
and any ``Host``. Now, as Nimbus and DRPC (``squall.runtime.httpguard``): a request must
arrive whole within its deadline (simulated time here), at most ``max_connections`` are
served at once (one more gets 503), and a ``Host`` that is not the endpoint's gets 421.
"""

from __future__ import annotations

import json

from squall.spark.control import ControlServer
from squall.testing import simulated_time
from tests.security.slowclient import answer, cut_while_trickling, half_open

SECRET = "control-limits-secret-0123456789"


def server(**kwargs) -> ControlServer:
    srv = ControlServer("127.0.0.1", SECRET, {("GET", "/info"): lambda body: {"ok": True}}, **kwargs)
    srv.start()
    return srv


def get(host: str, secret: str = SECRET) -> bytes:
    return (f"GET /info HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {secret}\r\n"
            f"Content-Length: 0\r\n\r\n").encode()


def port(srv: ControlServer) -> int:
    return int(srv.url.rsplit(":", 1)[1])


def test_a_half_open_request_without_the_secret_is_cut_at_the_deadline():
    with simulated_time() as clock:
        srv = server()
        try:
            s = half_open("127.0.0.1", port(srv), b"GET /info HTTP/1.1\r\nX-Pad: ")
            try:
                assert cut_while_trickling(s, clock), "the connection was still open after 10 deadlines"
            finally:
                s.close()
        finally:
            srv.stop()


def test_control_connections_are_capped():
    srv = server(max_connections=4)
    try:
        held = [half_open("127.0.0.1", port(srv), b"GET /info HTTP/1.1\r\n") for _ in range(4)]
        try:
            extra = half_open("127.0.0.1", port(srv), get("127.0.0.1"))
            reply = answer(extra)
            extra.close()
            assert reply.split(b" ")[1] == b"503", reply[:200]
        finally:
            for s in held:
                s.close()
    finally:
        srv.stop()


def test_a_foreign_host_gets_421_and_the_endpoints_own_name_is_answered():
    srv = server()
    try:
        s = half_open("127.0.0.1", port(srv), get("rebound.example.com"))
        reply = answer(s)
        s.close()
        assert reply.split(b" ")[1] == b"421", reply[:200]
        s = half_open("127.0.0.1", port(srv), get(f"127.0.0.1:{port(srv)}"))
        reply = answer(s)
        s.close()
        assert reply.split(b" ")[1] == b"200" and json.loads(reply.split(b"\r\n\r\n", 1)[1]) == {"ok": True}
    finally:
        srv.stop()
