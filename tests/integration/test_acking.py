"""Acks, fails, timeouts and max pending reaching the spout task that emitted.

Time runs simulated where a test is about time (timeouts, reset_timeout); the rest waits on
``tracked_topology(...).wait_idle()``, which knows exactly when every tree is decided.
"""

import time

from squall import Bolt, Config, Fields, LocalCluster, TopologyBuilder
from squall.runtime import clock
from squall.testing import simulated_time, tracked_topology
from tests.integration.components import (
    RECORD,
    FailBolt,
    ForwardBolt,
    ListSpout,
    NeverAckBolt,
    RaiseOnBolt,
    SlowBolt,
)


def run_until_idle(cluster, topology, c, name="t", timeout=30):
    """Submit, then return once every tuple was processed and every tree decided."""
    tracked = tracked_topology(cluster, name, c, topology)
    tracked.wait_idle(timeout=timeout)
    return tracked


def conf(workers=2, **extra):
    c = Config()
    c.set_num_workers(workers)
    c.update(extra)
    return c


def test_ack_reaches_the_emitting_spout_task_once_per_message():
    items = [[i] for i in range(100)]
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items), 2)
    b.set_bolt("a", ForwardBolt(), 2).shuffle_grouping("spout")
    b.set_bolt("b", ForwardBolt(), 2).shuffle_grouping("a")
    with LocalCluster() as cluster:
        run_until_idle(cluster, b.create_topology(), conf())
    acked = RECORD["spout.acked"]
    assert sorted(m for _, m in acked) == list(range(100))
    # ids by sorted component: a=1,2 b=3,4 spout=5,6; task 5 emitted the even msg ids
    assert all(task == 5 + m % 2 for task, m in acked)
    assert RECORD["spout.failed"] == []


def test_fail_from_a_bolt_reaches_the_spout_well_before_the_timeout():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1], [2]], replay=False), 1)
    b.set_bolt("fail", FailBolt(), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:  # the clock stands still: no timeout
        tracked = run_until_idle(cluster, b.create_topology(), conf(**{"topology.message.timeout.secs": 30}))
        info = tracked.info()
    assert sorted(m for _, m, _ in RECORD["spout.failed"]) == [0, 1]
    assert info["components"]["spout"]["failed"] == 2
    assert info["components"]["fail"]["failed"] == 2


def test_unacked_tuples_time_out_after_about_the_message_timeout():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1]], replay=False), 1)
    b.set_bolt("hold", NeverAckBolt(), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1, **{"topology.message.timeout.secs": 10}), b.create_topology())
        cluster.wait_quiet()
        assert RECORD["never.got"]
        cluster.advance_time(9.5)
        assert RECORD["spout.failed"] == []
        cluster.advance_time(6, increment=0.5)
    failed_at = RECORD["spout.failed"][0][2]
    # rotating buckets: expiry between T and 1.5 T (3 buckets)
    assert 10.0 <= failed_at <= 15.0


def test_timeouts_disabled_never_fail():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1]], replay=False), 1)
    b.set_bolt("hold", NeverAckBolt(), 1).shuffle_grouping("spout")
    c = conf(1, **{"topology.message.timeout.secs": 0.2, "topology.enable.message.timeouts": False})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c, b.create_topology())
        cluster.wait_quiet()
        assert RECORD["never.got"]
        cluster.advance_time(100)
    assert RECORD["spout.failed"] == []


def test_max_spout_pending_is_never_exceeded():
    items = [[i] for i in range(60)]
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items), 2)
    b.set_bolt("slow", SlowBolt(0.002), 1).shuffle_grouping("spout")
    c = conf(2)
    c.set_max_spout_pending(3)
    with LocalCluster() as cluster:
        run_until_idle(cluster, b.create_topology(), c)
    assert len(RECORD["spout.acked"]) == 60
    assert max(RECORD["spout.max_in_flight"]) == 3


def test_no_ackers_acks_at_emit_and_tracks_nothing():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(10)]), 1)
    b.set_bolt("hold", NeverAckBolt(), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, b.create_topology(), conf(1, **{"topology.acker.executors": 0})).info()
    assert len(RECORD["spout.acked"]) == 10
    assert "__acker" not in info["components"]
    assert RECORD["spout.failed"] == []


class HoldThenAck(Bolt):
    """Holds every tuple, resetting its timeout, then acks after ``hold`` seconds."""

    def __init__(self, hold):
        self.hold = hold

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.held = []

    def execute(self, tup):
        if tup.is_tick():
            now = clock.monotonic()
            for t, since in list(self.held):
                if now - since >= self.hold:
                    self.collector.ack(t)
                    self.held.remove((t, since))
                else:
                    self.collector.reset_timeout(t)
        else:
            self.held.append((tup, clock.monotonic()))

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": 0.1}


def test_reset_timeout_keeps_a_held_tuple_alive_beyond_twice_the_timeout():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1]], replay=False), 1)
    b.set_bolt("hold", HoldThenAck(hold=2.5), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(2, **{"topology.message.timeout.secs": 1}), b.create_topology())
        cluster.advance_time(2.4, increment=0.1)
        assert RECORD["spout.acked"] == []  # held for 2.5 s, over twice the timeout
        cluster.advance_time(0.5, increment=0.1)
    assert len(RECORD["spout.acked"]) == 1
    assert RECORD["spout.failed"] == []


class JoinBolt(Bolt):
    """Anchors one output to the last two inputs (multi-anchoring), then acks both."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.buffer = []

    def execute(self, tup):
        self.buffer.append(tup)
        if len(self.buffer) == 2:
            self.collector.emit([sum(t[0] for t in self.buffer)], anchors=self.buffer)
            for t in self.buffer:
                self.collector.ack(t)
            self.buffer = []

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_failure_downstream_of_a_multi_anchored_tuple_fails_every_root():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1], [2]], replay=False), 1)
    b.set_bolt("join", JoinBolt(), 1).global_grouping("spout")
    b.set_bolt("fail", FailBolt(), 1).shuffle_grouping("join")
    with simulated_time(), LocalCluster() as cluster:  # no timeout can be the cause
        run_until_idle(cluster, b.create_topology(), conf(2))
    assert len(RECORD["spout.failed"]) == 2
    assert RECORD["spout.acked"] == []


class UnanchoredForward(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values)  # not anchored
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_failure_downstream_of_an_unanchored_emit_does_not_fail_the_root():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1], [2]], replay=False), 1)
    b.set_bolt("fwd", UnanchoredForward(), 1).shuffle_grouping("spout")
    b.set_bolt("fail", FailBolt(), 1).shuffle_grouping("fwd")
    with LocalCluster() as cluster:
        run_until_idle(cluster, b.create_topology(), conf(2))
    assert len(RECORD["spout.acked"]) == 2
    assert RECORD["spout.failed"] == []


class AckEveryOther(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] % 2:
            self.collector.ack(tup)


def test_spout_replays_failed_tuples_until_all_are_acked():
    # the bolt never acks even values: they time out and are replayed until the test ends
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(6)]), 1)
    b.set_bolt("b", AckEveryOther(), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1, **{"topology.message.timeout.secs": 10}), b.create_topology())
        cluster.advance_time(15)
        assert sorted(m for _, m, _ in RECORD["spout.failed"]) == [0, 2, 4]  # one timeout each
        cluster.advance_time(15)
    assert sorted(m for _, m in RECORD["spout.acked"]) == [1, 3, 5]
    assert sorted(m for _, m, _ in RECORD["spout.failed"]) == [0, 0, 2, 2, 4, 4]  # replayed


class BlockingSpout(ListSpout):
    """Blocks in next_tuple for ``block`` seconds once, after emitting its first tuples."""

    def __init__(self, items, block):
        super().__init__(items)
        self.block = block

    def next_tuple(self):
        super().next_tuple()
        if len(self.queue) == len(self.items) // 2 and self.block:
            time.sleep(self.block)  # holds up the whole worker: nothing else may deadlock
            self.block = 0


def test_a_spout_blocking_in_next_tuple_does_not_deadlock_and_acks_catch_up():
    items = [[i] for i in range(20)]
    b = TopologyBuilder()
    b.set_spout("spout", BlockingSpout(items, block=1.5), 1)
    b.set_bolt("fwd", ForwardBolt(), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        run_until_idle(cluster, b.create_topology(), conf(1, **{"topology.message.timeout.secs": 1}))
    assert len({m for _, m in RECORD["spout.acked"]}) == 20



def test_a_poison_message_is_given_up_after_max_retries_and_the_rest_flows():
    # E1: the bolt always raises for 13; the spout replays every failure; with
    # squall.spout.max.retries=2 the third failure acks it, with the error reported
    items = [[i] for i in range(40)]
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items), 2)
    b.set_bolt("bolt", RaiseOnBolt(13), 2).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        # idle means nothing more will arrive: the poison message is not replayed again
        info = run_until_idle(cluster, b.create_topology(), conf(**{"squall.spout.max.retries": 2})).info()
    assert sorted(m for _, m in RECORD["spout.acked"]) == list(range(40))
    assert [m for _, m, _ in RECORD["spout.failed"]] == [13, 13]
    assert sorted(RECORD["raise.ok"]) == [i for i in range(40) if i != 13]
    messages = [e["message"] for e in info["errors"]]
    assert sum("cannot handle 13" in m for m in messages) == 3
    assert any("MaxRetriesError: message 13 failed 3 times (squall.spout.max.retries=2)" in m
               for m in messages)
