"""The DRPC server over HTTP: token, loopback, remote topologies, the command line."""

from __future__ import annotations

import http.client
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from squall import Config, LocalCluster
from squall.drpc import (
    DRPCAuthorizationError,
    DRPCClient,
    DRPCExecutionError,
    DRPCInvocationsClient,
    DRPCServer,
    LinearDRPCTopologyBuilder,
)
from tests.drpc.components import TWEETERS_DB, FailFinishBolt, NeverAnswers, expected_reach, reach_builder

TOKEN = "s3cret-token-for-tests"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server():
    with DRPCServer(TOKEN, port=0, timeout_secs=30) as srv:
        yield srv


def remote_conf(srv, **extra):
    c = Config()
    c.set_num_workers(2)
    c.update({"drpc.servers": ["127.0.0.1"], "drpc.port": srv.port, "squall.drpc.token": TOKEN})
    c.update(extra)
    return c


def raw_post(srv, path, body, headers=None):
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    conn.request("POST", path, json.dumps(body), headers or {})
    resp = conn.getresponse()
    return resp.status, resp.read().decode()


def test_binds_loopback_by_default(server):
    assert server.host == "127.0.0.1"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                                     {"Authorization": f"Basic {TOKEN}"}])
def test_every_endpoint_needs_the_token_and_never_shows_it(server, headers, caplog):
    caplog.set_level(logging.DEBUG)
    for path in ("/drpc/execute", "/drpc/fetch", "/drpc/result", "/drpc/fail"):
        status, text = raw_post(server, path, {"function": "f", "args": "a", "id": "1", "result": "r"},
                                headers)
        assert status == 401, path
        assert TOKEN not in text
    assert server.drpc.pending() == 0 and server.drpc.fetch_request("f") is None
    assert TOKEN not in caplog.text


def test_clients_with_a_wrong_token_are_refused(server):
    with pytest.raises(DRPCAuthorizationError):
        DRPCClient("127.0.0.1", server.port, token="nope").execute("f", "a", timeout=2)
    with pytest.raises(DRPCAuthorizationError):
        DRPCInvocationsClient("127.0.0.1", server.port, "nope").fetch_request("f")
    with pytest.raises(ValueError, match="token"):
        DRPCClient("127.0.0.1", server.port, token="")


def test_reach_through_the_server_from_python(server):
    with LocalCluster() as cluster:
        cluster.submit_topology("reach", remote_conf(server), reach_builder().create_remote_topology())
        client = DRPCClient("127.0.0.1", server.port, token=TOKEN)
        for url in TWEETERS_DB:
            assert client.execute("reach", url, timeout=30) == str(expected_reach(url))


def test_a_failed_request_reaches_the_remote_client_with_its_reason(server):
    builder = LinearDRPCTopologyBuilder("fails")
    builder.add_bolt(FailFinishBolt(), 2)
    with LocalCluster() as cluster:
        cluster.submit_topology("fails", remote_conf(server), builder.create_remote_topology())
        with pytest.raises(DRPCExecutionError) as info:
            DRPCClient("127.0.0.1", server.port, token=TOKEN).execute("fails", "x", timeout=20)
    assert info.value.type == "FAILED_REQUEST"
    assert "tuple tree failed or timed out in topology 'fails'" in str(info.value)


def test_timeouts_give_the_client_a_clear_error():
    builder = LinearDRPCTopologyBuilder("slow")
    builder.add_bolt(NeverAnswers(), 1)
    with DRPCServer(TOKEN, port=0, timeout_secs=1) as srv, LocalCluster() as cluster:
        cluster.submit_topology("slow", remote_conf(srv), builder.create_remote_topology())
        client = DRPCClient("127.0.0.1", srv.port, token=TOKEN)
        start = time.monotonic()
        with pytest.raises(DRPCExecutionError) as info:
            client.execute("slow", "x")  # the server's drpc.request.timeout.secs: 1 s
        assert info.value.type == "SERVER_TIMEOUT" and "no result within 1 s" in str(info.value)
        assert 1 <= time.monotonic() - start < 5
        with pytest.raises(DRPCExecutionError) as info:
            client.execute("slow", "x", timeout=0.3)  # the caller's shorter timeout
        assert "no result within 0.3 s" in str(info.value)


def test_an_unreachable_server_is_a_clear_error():
    with DRPCServer(TOKEN, port=0) as srv:
        port = srv.port
    with pytest.raises(DRPCExecutionError) as info:
        DRPCClient("127.0.0.1", port, token=TOKEN).execute("f", "a", timeout=2)
    assert info.value.type == "UNREACHABLE"


def test_an_answer_cut_off_mid_way_is_a_clear_error_not_a_dead_thread():
    # a server that stops while answering leaves a short body: the fetcher must see a
    # DRPCExecutionError (and back off), not an http.client exception that kills its thread
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer_short():
        conn, _ = listener.accept()
        with conn:
            got = b""
            while b"\r\n\r\n" not in got:  # the whole request, so closing sends no reset
                got += conn.recv(65536)
            head, body = got.split(b"\r\n\r\n", 1)
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 22\r\n\r\n{")
            conn.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=answer_short, daemon=True)
    t.start()
    try:
        with pytest.raises(DRPCExecutionError) as info:
            DRPCInvocationsClient("127.0.0.1", port, token=TOKEN).fetch_request("f", wait=0.1)
    finally:
        t.join(5)
        listener.close()
    assert info.value.type == "UNREACHABLE"
    assert "broke off its answer" in str(info.value) and "IncompleteRead" in str(info.value)


def _cli(*args, env=None, **kw):
    return [sys.executable, "-m", "squall.cli.main", *args]


def test_reach_from_the_command_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SQUALL_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(_cli("drpc", "--port", "0"), env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "listening on 127.0.0.1:" in line, line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        token_file = tmp_path / "home" / "drpc.token"
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        token = token_file.read_text().strip()
        assert token not in line
        c = Config()
        c.update({"drpc.servers": ["127.0.0.1"], "drpc.port": port,
                  "squall.drpc.token.file": str(token_file)})
        with LocalCluster() as cluster:
            cluster.submit_topology("reach", c, reach_builder().create_remote_topology())
            out = subprocess.run(_cli("drpc-call", "reach", "foo.com/blog/1", "--server", f"127.0.0.1:{port}",
                                      "--timeout", "30"),
                                 env=env, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == "16"
            bad = subprocess.run(_cli("drpc-call", "reach", "x", "--server", f"127.0.0.1:{port}"),
                                 env={**env, "SQUALL_DRPC_TOKEN": "wrong"}, capture_output=True,
                                 text=True, timeout=60)
            assert bad.returncode == 6 and "refused the token" in bad.stderr
    finally:
        proc.terminate()
        proc.wait(10)
    assert token not in proc.stderr.read()


def test_the_server_takes_its_token_from_the_environment(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SQUALL_HOME": str(tmp_path / "home"),
           "SQUALL_DRPC_TOKEN": "from-the-env-token-0123"}
    proc = subprocess.Popen(_cli("drpc", "--port", "0", "--conf", "drpc.request.timeout.secs=0.5"),
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "token in $SQUALL_DRPC_TOKEN" in line and "from-the-env-token-0123" not in line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        with pytest.raises(DRPCExecutionError) as info:  # authorized: it waited and timed out
            DRPCClient("127.0.0.1", port, token="from-the-env-token-0123").execute("nothing", "x")
        assert info.value.type == "SERVER_TIMEOUT"
        with pytest.raises(DRPCAuthorizationError):
            DRPCClient("127.0.0.1", port, token="other").execute("nothing", "x")
    finally:
        proc.terminate()
        proc.wait(10)
    assert not (tmp_path / "home" / "drpc.token").exists()


def test_an_unreachable_server_is_reported_once_and_never_blocks_the_worker():
    with DRPCServer(TOKEN, port=0) as srv:
        port = srv.port  # closed again: nothing listens there now
    builder = LinearDRPCTopologyBuilder("f")
    builder.add_bolt(NeverAnswers(), 1)
    c = Config()
    c.update({"drpc.servers": ["127.0.0.1"], "drpc.port": port, "squall.drpc.token": TOKEN})
    with LocalCluster() as cluster:
        cluster.submit_topology("f", c, builder.create_remote_topology())
        time.sleep(2.5)  # retries after 1 s and 2 s more
        errors = cluster.get_topology_info("f")["errors"]
    unreachable = [e for e in errors if "cannot reach the DRPC server" in e["message"]]
    assert len(unreachable) == 1 and unreachable[0]["component"] == "spout"
