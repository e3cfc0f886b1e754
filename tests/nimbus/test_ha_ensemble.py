"""Nimbus HA on a ZooKeeper ensemble of three (issue 41, item 5).

Three ZooKeeper servers on 127.0.0.1 form one ensemble; two Nimbus processes share it
through a multi-host URI (``zk://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/root``). One member
stopping leaves a quorum of two: the leading Nimbus keeps its leadership (its client moves
to another member within the session timeout, its session and lock node survive) and the
standby never leads. A second member stopping leaves no quorum: the leader steps down (its
connection is in doubt, RELIABILITY C9) and says so at once in its health, and no Nimbus
leads. When the members come back, one Nimbus leads again. No Spark: leadership is all
that is tested.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from squall.store import open_store
from tests.nimbus.harness import NimbusProcess, wait_for
from tests.nimbus.zookeeper_server import ZooKeeperEnsemble, four_letters

pytestmark = [pytest.mark.slow]
SESSION_TIMEOUT = 4.0


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("nimbus-ensemble")

    class W:
        pass
    w = W()
    w.ensemble = ZooKeeperEnsemble(root / "zk")
    w.ensemble.start()
    w.store = w.ensemble.uri("/squall-ensemble")
    conf = {"nimbus.zookeeper.session.timeout.secs": str(SESSION_TIMEOUT)}
    home = root / "home"
    w.a = NimbusProcess(home, root, store=w.store, conf=conf, name="nimbus-a").start()
    w.a.wait_leader()
    w.b = NimbusProcess(home, root, store=w.store, conf=conf, name="nimbus-b").start()
    try:
        yield w
    finally:
        for n in (w.a, w.b):
            try:
                n.stop()
            except subprocess.TimeoutExpired:  # a stop that hangs is this suite's fault to report, not leave
                n.kill()
                raise
        w.ensemble.stop()


def leaders(world) -> list[str]:
    return [n.url for n in (world.a, world.b) if (n.health() or {}).get("leader")]


def test_the_store_takes_every_member_of_the_uri(world):
    assert world.store.count(",") == 2
    store = open_store(world.store)
    try:
        store.put("probe/ensemble", {"members": 3})
        assert store.get("probe/ensemble") == {"members": 3}
    finally:
        store.close()
    h = world.b.health()
    assert h["leader"] is False and h["leader_url"] == world.a.url


def test_one_member_stops_and_the_leader_keeps_leading(world):
    stopped = next(i for i in range(3) if world.ensemble.mode(i) == "leader")  # the hardest one to lose
    world.ensemble.stop(stopped)
    deadline = time.monotonic() + 3 * SESSION_TIMEOUT
    seen = set()
    while time.monotonic() < deadline:  # the standby never leads meanwhile
        seen.update(leaders(world))
        time.sleep(0.1)
    assert seen <= {world.a.url}, f"leaders seen with one member stopped: {seen}"
    wait_for(lambda: leaders(world) == [world.a.url], 2 * SESSION_TIMEOUT, "Nimbus a to lead")
    assert "lost its ZooKeeper session" not in world.a.log_tail(1_000_000)
    world.stopped = [stopped]


def test_two_members_stop_and_the_leader_steps_down(world):
    second = next(i for i in range(3) if i not in world.stopped)
    world.ensemble.stop(second)
    world.stopped.append(second)
    # the member left serves until it sees its quorum gone (syncLimit ticks, about 2 s): a
    # client that lost its member reconnects there meanwhile, its session valid, and leads
    # again as ZooKeeper allows (no other can: the lock node stays). Once it stops serving:
    left = world.ensemble.members[next(i for i in range(3) if i not in world.stopped)]

    def not_serving() -> bool:  # it answers, and says it does not serve (a timeout says nothing)
        answer = four_letters(left.port, b"srvr", left.host)
        return bool(answer) and b"Mode: " not in answer
    wait_for(not_serving, 3 * SESSION_TIMEOUT, "the last member to see it has no quorum")
    # no quorum: the leader's connection is in doubt; it steps down and its health says so promptly
    h = wait_for(lambda: (h := world.a.health()) is not None and h["leader"] is False and h,
                 3 * SESSION_TIMEOUT, "Nimbus a to step down and answer its health")
    assert h["leader_url"] in (None, world.a.url, world.b.url)
    for _ in range(20):
        assert leaders(world) == []
        time.sleep(0.25)
    # and it still answers (a request waits for the connection for the session timeout at most)
    start = time.monotonic()
    assert world.a.health() is not None and time.monotonic() - start < 1.0


def test_the_members_come_back_and_one_nimbus_leads_again(world):
    for i in world.stopped:
        world.ensemble.start(i)
    wait_for(lambda: len(leaders(world)) == 1, 6 * SESSION_TIMEOUT, "one Nimbus to lead again")
    for _ in range(10):
        assert len(leaders(world)) == 1
        time.sleep(0.2)
