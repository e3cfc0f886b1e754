"""Waiting on topologies whose results are files written by worker processes."""

from __future__ import annotations

import socket
import time

from tests.spark import topo_module as tm


def wait_all_acked(out_dir: str, n: int, timeout: float) -> set[int]:
    """Wait until every spout message 0..n-1 was acked; returns the acked ids."""
    deadline = time.monotonic() + timeout
    acked: set[int] = set()
    while time.monotonic() < deadline:
        acked = tm.read_results(out_dir)[0]
        if len(acked) >= n:
            break
        time.sleep(0.2)
    return acked


def wait_acked_at_least(out_dir: str, k: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(tm.read_results(out_dir)[0]) < k:
        assert time.monotonic() < deadline, f"fewer than {k} messages acked after {timeout}s"
        time.sleep(0.05)


def wait_worker_back(cluster, name: str, worker: int, old_pid: int, timeout: float) -> dict:
    """Wait until ``worker`` runs again in a process other than ``old_pid``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        w = cluster.get_topology_info(name)["workers"][worker]
        if w["state"] == "RUNNING" and w["pid"] not in (None, old_pid):
            return w
        time.sleep(0.2)
    raise AssertionError(f"worker {worker} did not come back within {timeout}s")


def alive_hosts(ui: str) -> list[str]:
    """Hosts of the Workers a standalone master lists alive, from its UI's ``/json``.

    [] while the UI is not up, or answers with something else than JSON (it served an HTML
    page at /json while starting, more than once).
    """
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"{ui}/json", timeout=2) as resp:
            return [w["host"] for w in json.load(resp).get("workers", []) if w.get("state") == "ALIVE"]
    except (OSError, ValueError):
        return []


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout: float, what: str = "the condition") -> None:
    """Poll ``predicate`` on real time: the workers are real processes."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not hold within {timeout}s"
        time.sleep(0.05)
