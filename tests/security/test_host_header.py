"""Security second pass, finding 7: a foreign ``Host`` is refused (DNS rebinding).

A web page the operator opens can have its own name re-resolve to 127.0.0.1 and read a
loopback Nimbus's open pages as same-origin requests. Nimbus (API and web UI) and the DRPC
server now answer only the names of the address they are bound to (``localhost`` too for a
loopback bind), ``nimbus.url``'s host and ``nimbus.http.allowed.hosts``; others get 421.
"""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from squall.drpc.server import DRPCServer
from tests.security.inproc import InProcNimbus

DRPC_TOKEN = "drpc-host-test-token-0123456789"


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


def _non_loopback_address() -> str | None:
    """An IPv4 address of this host other than loopback (the one its default route uses), if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent for a UDP connect
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_nimbus_bound_to_a_non_loopback_address_answers_requests_naming_it(tmp_path):
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this host has no non-loopback IPv4 address")
    with InProcNimbus(tmp_path, host=address) as n:
        assert n.get("/api/v1/health", host=f"{address}:{n.port}")[0] == 200
        assert n.get("/api/v1/topology/summary")[0] == 200
        assert n.get("/api/v1/health", host=f"localhost:{n.port}")[0] == 421
        assert n.get("/api/v1/health", host=f"rebind.attacker.example:{n.port}")[0] == 421
