"""Security item 4: Nimbus's HTTP server bounds what a client can make it do.

Every route has a body limit checked before anything is read (a negative or non-numeric
``Content-Length`` is refused), idle or slow connections are cut after a timeout, a
``wait_secs`` is bounded, and the API can be served over TLS (``--tls-cert/--tls-key``).
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import time
import urllib.request

import pytest

from tests.nimbus import harness
from tests.nimbus.harness import PYTHON, Cli, NimbusProcess, free_port


@pytest.fixture(scope="module")
def nimbus(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    n = NimbusProcess(home, tmp_path_factory.mktemp("w"), conf={"nimbus.http.timeout.secs": "2"})
    # the fixture is module-scoped: the PYTHONPATH of this checkout by hand
    env = {**harness.base_env(home), "PYTHONPATH": str(harness.Path(__file__).resolve().parents[2])}
    saved = harness.base_env
    harness.base_env = lambda _home: env
    try:
        n.start()
    finally:
        harness.base_env = saved
    n.wait_leader()
    n.token = (home / "nimbus.token").read_text().strip()
    yield n
    n.stop()


def raw(nimbus, request: bytes, timeout: float = 5.0) -> bytes:
    """Send ``request`` as is; what the server answered before closing (or timing out)."""
    with socket.create_connection(("127.0.0.1", nimbus.port), timeout=timeout) as s:
        s.sendall(request)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
                if b"\r\n\r\n" in out:
                    head, _, rest = out.partition(b"\r\n\r\n")
                    length = [int(x.split(b":")[1]) for x in head.split(b"\r\n")
                              if x.lower().startswith(b"content-length:")]
                    if length and len(rest) >= length[0]:
                        break
        except TimeoutError:
            pytest.fail(f"no answer within {timeout}s to {request[:80]!r}")
        return out


def post(nimbus, path: str, length: str, body: bytes = b"") -> bytes:
    return raw(nimbus, (f"POST /api/v1{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        f"Authorization: Bearer {nimbus.token}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {length}\r\n\r\n").encode()
               + body)


def status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", " "])
def test_sec4_bad_content_length_is_refused(nimbus, length):
    reply = post(nimbus, "/topologies/wc/kill", length)
    assert status(reply) == 400, reply
    assert b"Content-Length" in reply


def test_sec4_bad_content_length_on_a_read_is_refused(nimbus):
    reply = raw(nimbus, b"GET /api/v1/topologies HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n")
    assert status(reply) == 400, reply


def test_sec4_each_route_has_a_size_limit_checked_before_reading(nimbus):
    # 10 MiB announced, nothing sent: refused at once rather than read (or waited for)
    reply = post(nimbus, "/topologies/wc/kill", str(10 << 20))
    assert status(reply) == 413, reply
    reply = raw(nimbus, b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
    assert status(reply) == 413, reply


def test_sec4_idle_connections_are_closed(nimbus):
    with socket.create_connection(("127.0.0.1", nimbus.port), timeout=15) as s:
        s.sendall(b"POST /api/v1/topologies/wc/kill HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing
        start = time.monotonic()
        try:
            data = s.recv(100)
        except TimeoutError:
            pytest.fail("the server kept an idle connection open for 15s")
        assert data == b"" or data.startswith(b"HTTP/1.")
        assert time.monotonic() - start < 10


@pytest.mark.parametrize("wait", [1e12, -1, "5", float("nan")])
def test_sec4_wait_secs_is_bounded(nimbus, wait):
    body = json.dumps({"wait_secs": wait}).encode()
    for path in ("/topologies/wc/kill", "/topologies/wc/rebalance"):
        reply = post(nimbus, path, str(len(body)), body)
        assert status(reply) == 400, reply
        assert b"wait_secs" in reply


def test_sec4_tls(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    home = tmp_path / "home"
    port = free_port()
    env = {**harness.base_env(home), "PYTHONPATH": str(harness.Path(__file__).resolve().parents[2])}
    log = open(tmp_path / "nimbus.log", "wb")
    proc = subprocess.Popen([PYTHON, "-m", "squall.cli.main", "nimbus", "--port", str(port),
                             "--data-dir", str(home), "--tls-cert", str(cert), "--tls-key", str(key)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"https://127.0.0.1:{port}"
    try:
        ctx = ssl.create_default_context(cafile=str(cert))
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v1/health", timeout=2, context=ctx) as r:
                    assert json.load(r)["url"] == url
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, \
                    (tmp_path / "nimbus.log").read_text()
                time.sleep(0.2)
        # plain HTTP gets no API answer
        with pytest.raises(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=5) as r:
                r.read()
        cli = Cli(url, home, tmp_path, extra_env={"SSL_CERT_FILE": str(cert)})
        proc_list = cli("list")
        assert proc_list.returncode == 0, proc_list.stderr
        assert cli("kill", "wc").returncode == 4  # reached over TLS with the token: no such topology
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(30)
        log.close()
