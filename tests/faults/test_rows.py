"""RELIABILITY.md rows on LocalCluster, named after their ids (see tests/faults/README.md)."""

import time

from squall import Bolt, Config, Fields, LocalCluster, Spout, TopologyBuilder
from squall.runtime import clock
from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.testing import FeederSpout, simulated_time, tracked_topology
from tests.integration.components import RECORD, StatefulCount, record


def conf(workers=1, **extra):
    c = Config()
    c.set_num_workers(workers)
    c.update(extra)
    return c


class AckEveryOther(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] % 2:
            self.collector.ack(tup)


class TimedFeeder(FeederSpout):
    """A FeederSpout that records the simulated time of each emit and fail."""

    def next_tuple(self):
        queue = self._feed.queue
        if queue:
            record("emitted_at", (queue[0][1], clock.monotonic()))
        super().next_tuple()

    def fail(self, msg_id):
        record("failed_at", (msg_id, clock.monotonic()))
        super().fail(msg_id)


def test_a7_ack_every_other_fails_2_only_after_the_timeout():
    feeder = TimedFeeder(Fields("n"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    b.set_bolt("half", AckEveryOther(), 1).shuffle_grouping("in")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(2, **{"topology.message.timeout.secs": 10}), b.create_topology())
        for n in (1, 2, 3):
            feeder.feed([n], msg_id=n)
        cluster.wait_quiet()
        assert sorted(feeder.acked) == [1, 3] and feeder.failed == []
        cluster.advance_time(9)
        assert feeder.failed == []  # not at 9 s
        cluster.advance_time(12, increment=0.5)  # to 21 s, in steps finer than the window
        assert feeder.failed == [2]
    emitted = dict(RECORD["emitted_at"])
    ((msg, failed_at),) = RECORD["failed_at"]
    # Storm's rotating timeout: 3 buckets rotated every T / 2, so a tree expires within
    # [T, 1.5 T] of its emit, never at 2 T
    assert msg == 2 and 10 <= failed_at - emitted[2] <= 15, (emitted, failed_at)


class FailOnce(Bolt):
    def prepare(self, conf, context, collector):
        self.collector, self.seen = collector, set()

    def execute(self, tup):
        if tup[0] not in self.seen:
            self.seen.add(tup[0])
            self.collector.fail(tup)
        else:
            record("second", tup[0])
            self.collector.ack(tup)


class Replaying(Spout):
    """Emits 0..n-1 and replays what fails (records both)."""

    def __init__(self, n):
        self.n = n

    def open(self, conf, context, collector):
        self.collector, self.todo = collector, list(range(self.n))

    def next_tuple(self):
        if self.todo:
            i = self.todo.pop(0)
            self.collector.emit([i], msg_id=i)

    def ack(self, msg_id):
        record("acked", msg_id)

    def fail(self, msg_id):
        record("failed", msg_id)
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


def test_a6_explicit_fail_reaches_the_spout_at_once_and_the_replay_succeeds():
    b = TopologyBuilder()
    b.set_spout("in", Replaying(20), 1)
    b.set_bolt("once", FailOnce(), 1).shuffle_grouping("in")
    with simulated_time(), LocalCluster() as cluster:  # the clock stands still: no timeout helps
        tracked_topology(cluster, "t", conf(2), b.create_topology()).wait_idle(timeout=30)
    assert sorted(RECORD["failed"]) == list(range(20))
    assert sorted(RECORD["acked"]) == list(range(20)) == sorted(RECORD["second"])


def test_b4_pending_rotates_once_per_period_with_several_spout_tasks_in_a_worker():
    feeder = FeederSpout(Fields("n"))
    other = FeederSpout(Fields("n"))
    b = TopologyBuilder()
    b.set_spout("a", feeder, 1)
    b.set_spout("b", other, 1)
    b.set_bolt("hold", AckEveryOther(), 1).shuffle_grouping("a").shuffle_grouping("b")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1, **{"topology.message.timeout.secs": 10}), b.create_topology())
        feeder.feed([2], msg_id="a")
        other.feed([4], msg_id="b")
        cluster.wait_quiet()
        # 3 buckets rotated every 5 s: a tuple emitted at 0 fails at the third rotation (15 s)
        cluster.advance_time(14.9, increment=0.1)
        assert feeder.failed == [] and other.failed == []
        cluster.advance_time(0.1)
        assert feeder.failed == ["a"] and other.failed == ["b"]  # each once, on time
        cluster.advance_time(30)
        assert feeder.failed == ["a"] and other.failed == ["b"]


class Exits(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == 1:
            raise SystemExit(3)
        self.collector.ack(tup)


def test_c3_a_bolt_calling_sys_exit_fails_its_tuple_and_the_worker_carries_on():
    feeder = FeederSpout(Fields("n"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    b.set_bolt("exits", Exits(), 1).shuffle_grouping("in")
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(1), b.create_topology())
        for n in range(4):
            feeder.feed([n], msg_id=n)
        tracked.wait_idle(timeout=30)
        errors = tracked.info()["errors"]
    assert feeder.failed == [1] and sorted(feeder.acked) == [0, 2, 3]
    assert [e["message"] for e in errors] == ["SystemExit: 3"]


class Flood(Spout):
    def open(self, conf, context, collector):
        self.collector, self.n = collector, 0

    def next_tuple(self):
        for _ in range(40):  # faster than the slow bolt can ever keep up with
            self.n += 1
            self.collector.emit([f"w{self.n % 50}"], msg_id=self.n)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class Slow(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        time.sleep(0.002)  # a bolt slower than its spout: backpressure all the time
        self.collector.ack(tup)


class ThrottleWatch:
    """Stands between the checkpoint spout and its collector, on the worker's thread: records
    each checkpoint tuple it emits and each ack it gets, with whether the worker was
    throttled (its other spouts held back by backpressure) at that moment."""

    def __init__(self, worker, spout):
        self.worker, self.inner, self.spout_ack = worker, spout._collector, spout.ack
        spout._collector = self
        spout.ack = self.ack

    def emit(self, values, stream, msg_id):
        record("d14.emitted", (values[0], values[1], self.worker.throttled))
        return self.inner.emit(values, stream=stream, msg_id=msg_id)

    def report_error(self, error):
        self.inner.report_error(error)

    def ack(self, msg_id):
        record("d14.acked", (msg_id[0], msg_id[1], self.worker.throttled))
        self.spout_ack(msg_id)


def committed_while_throttled() -> list:
    """Transactions whose PREPARE and COMMIT went out, and whose COMMIT was acked (every
    stateful task committed), each while the worker was throttled."""
    emitted, acked = set(RECORD["d14.emitted"]), set(RECORD["d14.acked"])
    return sorted(txid for txid, action, throttled in acked if action == "COMMIT" and throttled
                  and {(txid, "PREPARE", True), (txid, "COMMIT", True)} <= emitted)


def test_d14_checkpoints_complete_under_sustained_backpressure():
    b = TopologyBuilder()
    b.set_spout("flood", Flood(), 1)
    b.set_bolt("slow", Slow(), 1).shuffle_grouping("flood")
    b.set_bolt("count", StatefulCount(), 1).fields_grouping("flood", Fields("word"))
    c = conf(1, **{"topology.state.checkpoint.interval.ms": 100, "topology.message.timeout.secs": 30,
                   "topology.executor.receive.buffer.size": 128, "topology.max.spout.pending": 100000})
    with LocalCluster() as cluster:
        cluster.submit_topology("t", c, b.create_topology())
        (worker,) = cluster.workers("t")
        (task,) = cluster._get("t").plan.component_tasks[CHECKPOINT_SPOUT]
        assert worker.call(lambda: ThrottleWatch(worker, worker.tasks[task].spout)).wait(30)
        throttled = 0
        deadline = time.monotonic() + 90  # real time: a real slow bolt
        while time.monotonic() < deadline and (len(committed_while_throttled()) < 2
                                               or len(RECORD["stateful.commit"]) < 3):
            throttled += worker.throttled  # sampled
            time.sleep(0.05)
    assert throttled >= 10  # the spouts were held back by backpressure
    emitted = RECORD["d14.emitted"]
    # the checkpoint spout still ran while the others were held: whole checkpoints, from
    # PREPARE to the last task's commit, went through a throttled worker (barriers not starved)
    assert len(committed_while_throttled()) >= 2, (emitted, RECORD["d14.acked"])
    assert len(RECORD["stateful.commit"]) >= 3, RECORD["stateful.commit"]
