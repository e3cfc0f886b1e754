"""RELIABILITY C9: the leading Nimbus loses its ZooKeeper session while it lives.

Two Nimbus processes share a real ZooKeeper store, and a topology runs. The leader is
paused (SIGSTOP) for longer than the session timeout: ZooKeeper expires its session, its
election node goes with it and the standby takes over. When the old leader runs again it
finds its session lost and steps down: it reports the new leader, sends changes on to it,
and never relaunches, fences or changes the topology, whose master (pid and epoch) runs on
untouched. No topology is managed by two Nimbus processes.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from tests.nimbus.harness import Cli, NimbusProcess, wait_for
from tests.nimbus.test_lifecycle import assert_exact, ok, progress
from tests.nimbus.topology_source import write_topology

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "wc-c9"
SESSION_TIMEOUT = 4.0


@pytest.fixture(scope="module")
def world(tmp_path_factory, zookeeper):
    root = tmp_path_factory.mktemp("nimbus-c9")

    class W:
        pass
    w = W()
    w.root, w.home, w.out = root, root / "home", root / "out"
    w.file = write_topology(root / "wordcount.py", w.out, root / "state", "v1")
    conf = {"nimbus.zookeeper.session.timeout.secs": str(SESSION_TIMEOUT)}
    store = zookeeper.uri("/squall-c9")
    w.a = NimbusProcess(w.home, root, store=store, conf=conf, name="nimbus-a").start()
    w.a.wait_leader()
    w.b = NimbusProcess(w.home, root, store=store, conf=conf, name="nimbus-b").start()
    w.cli = Cli(f"{w.a.url},{w.b.url}", w.home, root)
    try:
        yield w
    finally:
        if w.a.proc is not None and w.a.proc.poll() is None:
            os.kill(w.a.proc.pid, signal.SIGCONT)
        w.cli("kill", NAME, "--wait", "0", timeout=120)
        w.a.stop()
        w.b.stop()


def relaunches(nimbus: NimbusProcess) -> list[str]:
    return re.findall(r"relaunching its master.*", nimbus.log_tail(1_000_000))


@pytest.mark.timeout(600)
def test_c9_a_leader_whose_session_expires_steps_down_and_the_standby_takes_over(world):
    ok(world.cli("submit", str(world.file), "--name", NAME, timeout=240))
    progress(world)
    before = world.cli.json("info", NAME)
    assert world.a.health()["leader"] is True and world.b.health()["leader"] is False

    os.kill(world.a.proc.pid, signal.SIGSTOP)  # alive, but silent to ZooKeeper
    paused = time.monotonic()
    try:
        took = world.b.wait_leader(timeout=SESSION_TIMEOUT + 30)
        print(f"standby took over {took:.1f}s into the leader's pause")
        time.sleep(max(0.0, 2 * SESSION_TIMEOUT - (time.monotonic() - paused)))  # well past the timeout
    finally:
        os.kill(world.a.proc.pid, signal.SIGCONT)

    # the old leader finds its session gone and steps down; the new one stays the only leader
    h = wait_for(lambda: (h := world.a.health()) and not h["leader"] and h["leader_url"] == world.b.url and h,
                 30, "the old leader to step down and name the new one")
    for _ in range(20):  # and it stays so (a leader whose lock is gone must not come back as one)
        assert world.a.health()["leader"] is False and world.b.health()["leader"] is True
        time.sleep(0.25)
    progress(world, more=40)
    after = world.cli.json("info", NAME)
    assert (after["master"]["pid"], after["epoch"], after["restarts"]) == (
        before["master"]["pid"], before["epoch"], before["restarts"]), "the topology master was relaunched"
    assert relaunches(world.a) == [] and relaunches(world.b) == []
    assert "lost its ZooKeeper session" in world.a.log_tail(1_000_000)
    # a change sent to the old leader first goes on to the new one, which alone applies it
    ok(Cli(f"{world.a.url},{world.b.url}", world.home, world.root)("deactivate", NAME))
    assert world.cli.json("info", NAME)["status"] == "INACTIVE"
    ok(world.cli("activate", NAME))
    progress(world)
    assert_exact(world)
    print(f"health of the old leader after the pause: {h}")
