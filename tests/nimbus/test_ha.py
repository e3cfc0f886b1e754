"""Nimbus HA on a real ZooKeeper: two Nimbus processes, one leads; kill it, the other serves.

Both share the ZooKeeper store and the data directory (blobs, token, logs), as two
Nimbus hosts share a blob store on a cluster. Commands may name either Nimbus: a standby
sends changes on to the leader. When the leader is SIGKILLed, ZooKeeper expires its
session after the session timeout and the standby takes over; the running topology is
untouched, and the new leader lists, changes and kills it.
"""

from __future__ import annotations

import signal
import time

import pytest

from tests.nimbus import results as R
from tests.nimbus.harness import Cli, NimbusProcess
from tests.nimbus.test_lifecycle import assert_exact, ok, progress
from tests.nimbus.topology_source import write_topology

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "wc-ha"
SESSION_TIMEOUT = "4"


@pytest.fixture(scope="module")
def world(tmp_path_factory, zookeeper):
    root = tmp_path_factory.mktemp("nimbus-ha")

    class W:
        pass
    w = W()
    w.root, w.home, w.out = root, root / "home", root / "out"
    w.file = write_topology(root / "wordcount.py", w.out, root / "state", "v1")
    conf = {"nimbus.zookeeper.session.timeout.secs": SESSION_TIMEOUT}
    store = zookeeper.uri("/squall-ha")
    w.a = NimbusProcess(w.home, root, store=store, conf=conf, name="nimbus-a").start()
    w.a.wait_leader()
    w.b = NimbusProcess(w.home, root, store=store, conf=conf, name="nimbus-b").start()
    w.cli = Cli(f"{w.b.url},{w.a.url}", w.home, root)  # the standby first: it must redirect
    try:
        yield w
    finally:
        w.cli("kill", NAME, "--wait", "0", timeout=120)
        w.a.stop()
        w.b.stop()


def test_one_leader_and_a_standby_that_redirects(world):
    assert world.a.health()["leader"] is True
    h = world.b.health()
    assert h["leader"] is False and h["leader_url"] == world.a.url
    ok(world.cli("submit", str(world.file), "--name", NAME, timeout=240))
    rows = Cli(world.b.url, world.home, world.root).json("list")  # the standby reads the store
    assert [(r["name"], r["status"]) for r in rows] == [(NAME, "ACTIVE")]
    progress(world)


def test_the_standby_takes_over_when_the_leader_dies(world):
    info = world.cli.json("info", NAME)
    world.a.kill(signal.SIGKILL)
    killed = time.monotonic()
    took = world.b.wait_leader(timeout=30)
    print(f"standby took over {took:.1f}s after the leader's SIGKILL")
    assert took < float(SESSION_TIMEOUT) + 6
    progress(world, more=60)
    after = world.cli.json("info", NAME)
    assert after["master"]["pid"] == info["master"]["pid"] and after["epoch"] == info["epoch"]
    assert after["status"] == "ACTIVE"
    # the new leader changes it: a rebalance, through the dead leader's URL first in line
    cli = Cli(f"{world.a.url},{world.b.url}", world.home, world.root)
    ok(cli("rebalance", NAME, "--workers", "3"))
    assert cli.json("info", NAME)["num_workers"] == 3
    print(f"rebalanced {time.monotonic() - killed:.1f}s after the SIGKILL")
    progress(world)
    assert_exact(world)


def test_the_new_leader_kills_it(world):
    ok(world.cli("kill", NAME, "--wait", "0", timeout=180))
    assert world.cli.json("list") == []
    ids, counts, want = R.counts_of_acked(world.out)
    assert counts == want and len(ids) > 100
