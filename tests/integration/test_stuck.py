"""Issue 22: a task inside one call past squall.task.stuck.secs is reported as stuck, with
the stack where it waits, and cleared when it moves on; a backpressure cycle is named.
These run on real time: the watchdog watches real threads held on purpose."""

import threading
import time

import pytest

from squall import Bolt, Config, Fields, LocalCluster, TopologyBuilder
from squall.testing import FeederSpout, tracked_topology
from tests.integration.components import record

GATE = threading.Event()


def wait_for_the_gate():
    GATE.wait(30)


class Held(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == "hold":
            wait_for_the_gate()
        record("done", tup[0])
        self.collector.ack(tup)


def wait_real(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)  # a real thread is held on purpose
    return predicate()


@pytest.mark.parametrize("threaded", [False, True])
def test_a_stuck_task_is_reported_with_its_stack_and_cleared_when_it_moves(threaded):
    GATE.clear()
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    bolt = b.set_bolt("held", Held(), 1).shuffle_grouping("in")
    if threaded:
        bolt.set_threaded()
    conf = Config()
    conf.update({"topology.workers": 1, "squall.task.stuck.secs": 0.5})
    try:
        with LocalCluster() as cluster:
            tracked = tracked_topology(cluster, "t", conf, b.create_topology())
            feeder.feed(["hold"], msg_id=1)
            assert wait_real(lambda: cluster.get_topology_info("t")["stuck"], 10)
            info = cluster.get_topology_info("t")
            (stuck,) = info["stuck"]
            assert (stuck["component"], stuck["task"], stuck["method"]) == ("held", 1, "execute")
            assert stuck["waits_in"].startswith("wait")  # Event.wait / Condition.wait, inside the gate
            assert "wait_for_the_gate" in stuck["stack"] and "GATE.wait(30)" in stuck["stack"]
            (error,) = [e for e in info["errors"] if "StuckTaskError" in e["message"]]
            assert error["component"] == "held"
            assert "inside execute for" in error["message"]
            assert "squall.task.stuck.secs=0.5" in error["message"]
            assert "wait_for_the_gate" in error["traceback"]
            GATE.set()
            tracked.wait_idle(timeout=30)
            assert wait_real(lambda: cluster.get_topology_info("t")["stuck"] == [], 10)
            assert feeder.acked == [1]
    finally:
        GATE.set()


def test_short_calls_are_never_reported():
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    b.set_bolt("held", Held(), 1).shuffle_grouping("in")
    conf = Config()
    conf.update({"topology.workers": 1, "squall.task.stuck.secs": 0.2})
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf, b.create_topology())
        for i in range(2000):
            feeder.feed([i], msg_id=i)
        tracked.wait_idle(timeout=30)
        time.sleep(0.5)  # real time: give the watchdog its samples
        info = cluster.get_topology_info("t")
    assert info["stuck"] == [] and info["errors"] == []


class Echo(Bolt):
    """Sends every tuple on twice: in a cycle the traffic only grows."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup[0]])
        self.collector.emit([tup[0]])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_a_backpressure_cycle_is_reported_naming_its_components():
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    b.set_bolt("a", Echo(), 1).shuffle_grouping("in").shuffle_grouping("b")
    b.set_bolt("b", Echo(), 1).shuffle_grouping("a")
    conf = Config()
    conf.update({"topology.workers": 1, "squall.backpressure.cycle.secs": 0.5,
                 "topology.executor.receive.buffer.size": 256})
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        feeder.feed([1])

        def reported():
            return [e for e in cluster.get_topology_info("t")["errors"]
                    if "BackpressureCycleError" in e["message"]]
        assert wait_real(reported, 15)
        (error,) = reported()
        assert "a -> b -> a" in error["message"] and "throttled" in error["message"]
        started = time.monotonic()
    assert time.monotonic() - started < 10  # the kill still works
