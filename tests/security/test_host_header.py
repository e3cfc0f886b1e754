"""Security second pass, finding 7: a foreign ``Host`` is refused (DNS rebinding).

A web page the operator opens can have its own name re-resolve to 127.0.0.1 and read a
loopback Nimbus's open pages as same-origin requests. Nimbus (API and web UI) and the DRPC
server now answer only the names of the address they are bound to (``localhost`` too for a
loopback bind), ``nimbus.url``'s host and ``nimbus.http.allowed.hosts``; others get 421.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path

from squall.drpc.server import DRPCServer
from tests.security.inproc import InProcNimbus

DRPC_TOKEN = "drpc-host-test-token-0123456789"
ROOT = Path(__file__).resolve().parents[2]


def test_nimbus_refuses_a_rebound_host_and_answers_its_own_names(tmp_path):
    with InProcNimbus(tmp_path) as n:
        for path in ("/api/v1/cluster/configuration", "/api/v1/health", "/"):
            status, body = n.get(path, host=f"rebind.attacker.example:{n.port}")
            assert status == 421, (path, status, str(body)[:200])
            assert "rebind.attacker.example" in body["error"]
        for host in (f"127.0.0.1:{n.port}", f"localhost:{n.port}", "localhost", f"LOCALHOST:{n.port}"):
            assert n.get("/api/v1/health", host=host)[0] == 200, host


def test_nimbus_allow_list_adds_names(tmp_path):
    with InProcNimbus(tmp_path, http_allowed_hosts="nimbus.example.org, ui.example.org") as n:
        assert n.get("/api/v1/health", host=f"nimbus.example.org:{n.port}")[0] == 200
        assert n.get("/api/v1/health", host="ui.example.org")[0] == 200
        assert n.get("/api/v1/health", host="other.example.org")[0] == 421


def test_non_loopback_bind_answers_its_own_address_only():
    from squall.runtime.httpguard import host_allowed, host_names

    # a Nimbus bound to a namespace address such as 10.77.0.2 (the multi-host tests)
    names = host_names("10.77.0.2", extra=("http://10.77.0.2:6627",))
    assert host_allowed("10.77.0.2:6627", names, "10.77.0.2")
    assert not host_allowed("localhost:6627", names, "10.77.0.2")
    assert not host_allowed("rebind.attacker.example:6627", names, "10.77.0.2")
    # bound to every address: IP addresses pass (rebinding needs a name), names need the list
    anywhere = host_names("0.0.0.0", extra=("http://nimbus.internal:6627",))
    assert host_allowed("10.1.2.3:6627", anywhere, "0.0.0.0")
    assert host_allowed("nimbus.internal", anywhere, "0.0.0.0")
    assert not host_allowed("rebind.attacker.example", anywhere, "0.0.0.0")


def test_nimbus_on_another_loopback_address_answers_requests_naming_it(tmp_path):
    with InProcNimbus(tmp_path, host="127.0.0.2") as n:
        assert n.get("/api/v1/health", host=f"127.0.0.2:{n.port}")[0] == 200
        assert n.get("/api/v1/health")[0] == 200  # http.client sends the address it connects to
        assert n.get("/api/v1/health", host="evil.example")[0] == 421


def test_drpc_server_refuses_a_foreign_host():
    with DRPCServer(DRPC_TOKEN, port=0) as srv:
        def post(host: str) -> int:
            conn = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
            body = json.dumps({"function": "f", "wait": 0}).encode()
            conn.request("POST", "/drpc/fetch", body=body, headers={
                "Host": host, "Authorization": f"Bearer {DRPC_TOKEN}", "Content-Type": "application/json"})
            status = conn.getresponse().status
            conn.close()
            return status
        assert post(f"rebind.attacker.example:{srv.port}") == 421
        assert post(f"127.0.0.1:{srv.port}") == 200
        assert post(f"localhost:{srv.port}") == 200


def test_squall_drpc_takes_its_allowed_hosts_from_the_command_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SQUALL_HOME": str(tmp_path / "home"),
           "SQUALL_DRPC_TOKEN": DRPC_TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "squall.cli.main", "drpc", "--port", "0",
                             "--conf", "drpc.http.allowed.hosts=drpc.internal, other.internal"],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        port = int(line.split("127.0.0.1:")[1].split()[0])

        def status(host: str) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/drpc/fetch", body=json.dumps({"function": "f", "wait": 0}), headers={
                "Host": host, "Authorization": f"Bearer {DRPC_TOKEN}", "Content-Type": "application/json"})
            answer = conn.getresponse().status
            conn.close()
            return answer
        assert status(f"drpc.internal:{port}") == 200
        assert status(f"other.internal:{port}") == 200
        assert status(f"rebind.attacker.example:{port}") == 421
    finally:
        proc.terminate()
        proc.wait(10)
