"""Nimbus is stateless (RELIABILITY C8), and a dead topology master is relaunched.

SIGKILL Nimbus while the word count runs: the topology keeps processing, since its master
is a Spark application of its own; a new Nimbus on the same store lists it, changes it
and kills it. SIGKILL the topology master itself: Nimbus relaunches it under a new epoch,
the workers' state comes back from the checkpoints and the spout replays; no sentence is
lost.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.nimbus import results as R
from tests.nimbus.harness import Cli, NimbusProcess, cleanup_topologies, wait_for
from tests.nimbus.test_lifecycle import assert_exact, ok, progress
from tests.nimbus.topology_source import write_topology

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "wc-failover"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("nimbus-failover")

    class W:
        pass
    w = W()
    w.root, w.home, w.out = root, root / "home", root / "out"
    w.file = write_topology(root / "wordcount.py", w.out, root / "state", "v1")
    w.nimbus = NimbusProcess(w.home, root, name="nimbus-a").start()
    w.cli = Cli(w.nimbus.url, w.home, root)
    try:
        yield w
    finally:
        cleanup_topologies(w.cli, w.home)
        w.nimbus.stop()


def row(w) -> dict:
    return next(t for t in w.cli.json("list") if t["name"] == NAME)


def test_topology_survives_nimbus_sigkill_and_a_new_nimbus_manages_it(world):
    ok(world.cli("submit", str(world.file), "--name", NAME, timeout=240))
    master_pid = world.cli.json("info", NAME)["master"]["pid"]
    progress(world)
    world.nimbus.kill(signal.SIGKILL)
    assert world.cli("list").returncode == 3  # nobody answers now
    progress(world, more=60)  # ... and the topology does not care
    # a new Nimbus (same data directory, another port) finds it in the store
    world.nimbus = NimbusProcess(world.home, world.root, name="nimbus-b").start()
    world.cli.url = world.nimbus.url
    t = row(world)
    assert (t["status"], t["master"], t["version"]) == ("ACTIVE", "RUNNING", 1)
    info = world.cli.json("info", NAME)
    assert info["master"]["pid"] == master_pid, "the topology master was restarted"
    assert [w["state"] for w in info["workers"]] == ["RUNNING", "RUNNING"]
    ok(world.cli("deactivate", NAME))
    ok(world.cli("activate", NAME))
    ok(world.cli("rebalance", NAME, "--parallelism", "count=3"))
    assert len(world.cli.json("info", NAME)["components"]["count"]["tasks"]) == 3
    progress(world)
    assert_exact(world)


def test_a_killed_topology_master_is_relaunched(world):
    info = world.cli.json("info", NAME)
    old_pid, epoch = info["master"]["pid"], info["epoch"]
    os.kill(old_pid, signal.SIGKILL)
    killed = time.monotonic()

    def relaunched():
        t = world.cli.json("info", NAME)
        return t if t["epoch"] > epoch and t["master"]["state"] == "RUNNING" and t["workers"] else None
    info = wait_for(relaunched, 120, "Nimbus to relaunch the topology master")
    print(f"master relaunched {time.monotonic() - killed:.1f}s after SIGKILL")
    assert info["master"]["pid"] != old_pid and info["restarts"] == 1
    # the rebalanced parallelism is part of the record: the relaunch keeps it
    assert len(info["components"]["count"]["tasks"]) == 3
    progress(world, more=60, timeout=90)
    assert_exact(world)


def test_the_new_nimbus_kills_it(world):
    ok(world.cli("kill", NAME, "--wait", "0", timeout=180))
    assert world.cli.json("list") == []
    ids, counts, want = R.counts_of_acked(world.out)
    assert counts == want and len(ids) > 200
