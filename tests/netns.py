"""Hosts of their own on one machine: Linux network namespaces joined by a bridge.

Every host is a namespace (``sqh43-<name>``) with its own loopback and one interface on
the private subnet ``10.77.43.0/24``, joined by veth pairs to a bridge in a hub namespace
of its own. The test process stays in the machine's namespace and joins the subnet as
10.77.43.1 (the client's host: the CLI, the browser, Prometheus), through one more veth
pair. A host reaches another only through its address, as on a real network: a server
that binds or advertises 127.0.0.1 is unreachable from the others. Nothing is routed
beyond the subnet, so the traffic stays between the namespaces made here.

Processes are started in a host with ``ip netns exec`` (see ``Network.command``); they
share the machine's files and process ids, so tests read the files they write and signal
them by pid. Needs root (CI and the sessions run as root) and iproute2.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

PREFIX = "sqh43-"  # namespaces and links of a crashed earlier run carry it too
SUBNET = "10.77.43"
CLIENT = f"{SUBNET}.1"
ROOT_LINK = "sqh43-root"
HUB = f"{PREFIX}hub"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def stale_namespaces() -> list[str]:
    """Namespaces of this module's prefix that exist now (left over, or in use)."""
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def kill_in(namespace: str) -> None:
    """SIGKILL every process running in ``namespace`` (only the tests' servers run there)."""
    for pid in _ip("netns", "pids", namespace, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def remove_all() -> None:
    """Delete every namespace and link of the prefix (a crashed run's included).

    Processes still inside are killed first: a deleted namespace lives on while one runs.
    """
    for name in stale_namespaces():
        kill_in(name)
        _ip("netns", "delete", name, check=False)
    _ip("link", "delete", ROOT_LINK, check=False)
    # a namespace's links go asynchronously: wait until the root end has gone with them
    deadline = time.monotonic() + 10
    while _ip("link", "show", ROOT_LINK, check=False).returncode == 0 and time.monotonic() < deadline:
        time.sleep(0.1)


def check_usable() -> None:
    """Fail the test with one line when namespaces cannot be made here."""
    if shutil.which("ip") is None:
        pytest.fail("the host tests need iproute2's `ip` (apt-get install iproute2)", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("the host tests make network namespaces and need root (CI runs them as root)",
                    pytrace=False)


class Network:
    """Hosts ``names`` on ``SUBNET``, addresses .2, .3, ... in order; the test process is .1."""

    def __init__(self, names: list[str]) -> None:
        self.addresses = {name: f"{SUBNET}.{i}" for i, name in enumerate(names, start=2)}

    def namespace(self, host: str) -> str:
        return f"{PREFIX}{host}"

    def command(self, host: str, args: list[str]) -> list[str]:
        """``args`` run on ``host`` (inside its namespace)."""
        return ["ip", "netns", "exec", self.namespace(host), *args]

    def up(self) -> Network:
        check_usable()
        remove_all()
        try:
            _ip("netns", "add", HUB)
            _ip("-n", HUB, "link", "add", "br0", "type", "bridge")
            _ip("-n", HUB, "link", "set", "br0", "up")
            _ip("link", "add", ROOT_LINK, "type", "veth", "peer", "name", "sqh43-rootp")
            self._attach("sqh43-rootp", "root")
            _ip("addr", "add", f"{CLIENT}/24", "dev", ROOT_LINK)
            _ip("link", "set", ROOT_LINK, "up")
            for i, (host, address) in enumerate(self.addresses.items()):
                ns = self.namespace(host)
                _ip("netns", "add", ns)
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", HUB, "link", "add", f"h{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
                _ip("-n", HUB, "link", "set", f"h{i}", "master", "br0", "up")
                _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
        except BaseException:
            remove_all()
            raise
        return self

    def _attach(self, link: str, name: str) -> None:
        _ip("link", "set", link, "netns", HUB)
        _ip("-n", HUB, "link", "set", link, "name", f"p-{name}")
        _ip("-n", HUB, "link", "set", f"p-{name}", "master", "br0", "up")

    def down(self) -> None:
        remove_all()

    def kill_all(self) -> None:
        """SIGKILL every process still running in one of the hosts (the last resort of cleanup)."""
        for host in self.addresses:
            kill_in(self.namespace(host))
