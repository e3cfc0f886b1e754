"""Issue 22: a thread per task (set_threaded). While a threaded bolt's task is held inside
execute, the other tasks of its worker keep processing and acking; without set_threaded the
same topology stalls. Every guarantee stays: acking, timeouts, deactivate, kill, errors."""

import threading
import time

import pytest

from squall import BasicBolt, Bolt, Config, Fields, LocalCluster, Spout, StatefulBolt, TopologyBuilder
from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.testing import FeederSpout, simulated_time, tracked_topology
from tests.integration.components import RECORD, record

GATES: dict[str, threading.Event] = {}


class GatedBolt(Bolt):
    """Holds each tuple whose value is "wait" until the test opens gate ``name``."""

    def __init__(self, name):
        self.name = name

    def prepare(self, conf, context, collector):
        self.collector = collector
        record("gated.thread", threading.current_thread().name)

    def execute(self, tup):
        record("gated.thread", threading.current_thread().name)
        if tup[0] == "wait":
            record("gated.entered", tup[0])
            GATES[self.name].wait(30)
        self.collector.emit([tup[0]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


class Sink(BasicBolt):
    def execute(self, tup, collector):
        record("sink", tup[0])


def topology(threaded, name):
    slow, fast = FeederSpout(Fields("value")), FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("slow_in", slow, 1)
    b.set_spout("fast_in", fast, 1)
    gated = b.set_bolt("lookup", GatedBolt(name), 1).shuffle_grouping("slow_in")
    if threaded:
        gated.set_threaded()
    b.set_bolt("sink", Sink(), 1).shuffle_grouping("fast_in").shuffle_grouping("lookup")
    return b, slow, fast


def wait_real(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.005)  # a real thread is held on purpose: real time
    return predicate()


@pytest.mark.parametrize("threaded", [True, False])
def test_a_waiting_threaded_task_does_not_stall_its_worker(threaded):
    name = f"gate-{threaded}"
    GATES[name] = threading.Event()
    b, slow, fast = topology(threaded, name)
    conf = Config()
    conf.set_num_workers(1)
    try:
        with LocalCluster() as cluster:
            tracked = tracked_topology(cluster, "t", conf, b.create_topology())
            slow.feed(["wait"], msg_id="held")
            assert wait_real(lambda: RECORD["gated.entered"], 10)
            for i in range(20):
                fast.feed([i], msg_id=i)
            flowed = wait_real(lambda: len(fast.acked) == 20, 3 if threaded else 0.5)
            if threaded:
                assert flowed and sorted(fast.acked) == list(range(20))
                assert slow.acked == []  # still held
            else:
                assert not flowed and fast.acked == []  # the whole worker waits with it
            GATES[name].set()
            tracked.wait_idle(timeout=30)
            assert slow.acked == ["held"] and sorted(fast.acked) == list(range(20))
            assert sorted(RECORD["sink"], key=str) == sorted([*range(20), "wait"], key=str)
    finally:
        GATES[name].set()
    threads = set(RECORD["gated.thread"])
    if threaded:  # prepare and every execute on the task's own thread
        assert threads == {"squall-task-lookup-2"}
    else:
        assert threads == {"squall-worker-0"}


class Counting(BasicBolt):
    def prepare(self, conf, context):
        self.n = 0

    def execute(self, tup, collector):
        self.n += 1
        collector.emit([tup[0], threading.current_thread().name])

    def cleanup(self):
        record("cleanup", (self.n, threading.current_thread().name))

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value", "thread"))


class Collect(BasicBolt):
    def execute(self, tup, collector):
        record("collected", (tup[0], tup[1]))


def test_threaded_bolts_across_workers_ack_every_tree_and_clean_up_on_their_thread():
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 2)
    b.set_bolt("count", Counting(), 3).set_threaded().fields_grouping("in", Fields("value"))
    b.set_bolt("collect", Collect(), 2).shuffle_grouping("count")
    conf = Config()
    conf.set_num_workers(2)
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf, b.create_topology())
        for i in range(300):
            feeder.feed([i], msg_id=i)
        tracked.wait_idle(timeout=60)
        assert sorted(feeder.acked) == list(range(300)) and feeder.failed == []
    assert sorted(v for v, _ in RECORD["collected"]) == list(range(300))
    assert {t for _, t in RECORD["collected"]} <= {f"squall-task-count-{i}" for i in (3, 4, 5)}
    assert sum(n for n, _ in RECORD["cleanup"]) == 300
    assert all(t.startswith("squall-task-count-") for _, t in RECORD["cleanup"])


class NeverAck(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        record("held", tup[0])


def test_timeouts_fail_trees_held_by_a_threaded_bolt_on_simulated_time():
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    b.set_bolt("hold", NeverAck(), 1).set_threaded().shuffle_grouping("in")
    conf = Config()
    conf.update({"topology.workers": 2, "topology.message.timeout.secs": 10})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        feeder.feed([1], msg_id=1)
        cluster.wait_quiet()
        assert RECORD["held"] == [1]
        cluster.advance_time(9)
        assert feeder.failed == []
        cluster.advance_time(7)
        assert feeder.failed == [1]


class ThreadedSpout(Spout):
    """Emits 0..n-1 tracked; records the thread of every call and deactivate violations."""

    def __init__(self, n):
        self.n = n

    def open(self, conf, context, collector):
        self.collector, self.i, self.off = collector, 0, False
        record("spout.thread", threading.current_thread().name)

    def next_tuple(self):
        record("spout.thread", threading.current_thread().name)
        if self.off:
            record("violation", self.i)
        if self.i < self.n:
            self.collector.emit([self.i], msg_id=self.i)
            self.i += 1

    def ack(self, msg_id):
        record("spout.acked", msg_id)
        record("spout.thread", threading.current_thread().name)

    def activate(self):
        self.off = False
        record("spout.thread", threading.current_thread().name)

    def deactivate(self):
        self.off = True
        record("deactivated", self.i)
        record("spout.thread", threading.current_thread().name)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_a_threaded_spout_keeps_every_contract_on_its_own_thread():
    b = TopologyBuilder()
    b.set_spout("src", ThreadedSpout(200), 1).set_threaded()
    b.set_bolt("sink", Sink(), 2).shuffle_grouping("src")
    conf = Config()
    conf.update({"topology.workers": 2, "topology.max.spout.pending": 10})
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf, b.create_topology())
        tracked.wait_idle(timeout=60)
        assert sorted(RECORD["spout.acked"]) == list(range(200))
        assert sorted(RECORD["sink"]) == list(range(200))
        cluster.deactivate("t")
        assert RECORD["deactivated"]  # delivered before deactivate returned
        cluster.wait_quiet()
        cluster.kill_topology("t")
    assert RECORD["violation"] == []
    assert set(RECORD["spout.thread"]) == {"squall-task-src-3"}


class AcksFromItsOwnThread(Bolt):
    """Hands each tuple to a thread of its own making, which tries to emit and ack it."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        def work():
            for call in (lambda: self.collector.emit([tup[0]], anchors=tup),
                         lambda: self.collector.ack(tup), lambda: self.collector.fail(tup)):
                try:
                    call()
                except RuntimeError as e:
                    record("refused", str(e))
        t = threading.Thread(target=work)
        t.start()
        t.join()
        self.collector.ack(tup)  # from the task's thread: fine

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


@pytest.mark.parametrize("threaded", [False, True])
def test_e10_collectors_refuse_calls_from_other_threads_clearly(threaded):
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    bolt = b.set_bolt("own", AcksFromItsOwnThread(), 1).shuffle_grouping("in")
    if threaded:
        bolt.set_threaded()
    conf = Config()
    conf.set_num_workers(1)
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf, b.create_topology())
        feeder.feed([1], msg_id=1)
        tracked.wait_idle(timeout=30)
    assert feeder.acked == [1]  # the one ack from the task's thread counted, once
    assert len(RECORD["refused"]) == 3
    assert all("not the task's own thread" in m and "component 'own' task 2" in m
               for m in RECORD["refused"])


class Where(BasicBolt):
    """Records the thread each execute runs on, under its component's name."""

    def prepare(self, conf, context):
        self.name = context.component_id

    def execute(self, tup, collector):
        record(f"thread.{self.name}", threading.current_thread().name)


class Keep(StatefulBolt):
    """Acks; its state is checkpointed (so the checkpoint spout runs)."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.state = state

    def execute(self, tup):
        self.collector.ack(tup)


def test_the_topology_setting_threads_every_component_unless_the_component_says_no():
    # issue 31 item 7: squall.task.threaded in the topology's configuration
    name = "gate-topology"
    GATES[name] = threading.Event()
    slow, fast = FeederSpout(Fields("value")), FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("slow_in", slow, 1)
    b.set_spout("fast_in", fast, 1)
    b.set_bolt("lookup", GatedBolt(name), 1).shuffle_grouping("slow_in")
    b.set_bolt("where", Where(), 1).shuffle_grouping("fast_in")
    b.set_bolt("looped", Where(), 1).set_threaded(False).shuffle_grouping("fast_in")
    b.set_spout("quiet_in", FeederSpout(Fields("value")), 1)  # never fed
    b.set_bolt("counted", Keep(), 1).shuffle_grouping("quiet_in")  # checkpoints flow
    conf = Config()
    conf.set_num_workers(1)
    conf["squall.task.threaded"] = True
    try:
        with LocalCluster() as cluster:
            tracked = tracked_topology(cluster, "t", conf, b.create_topology())
            (worker,) = cluster.workers("t")
            threaded = sorted(th.task.component for th in worker.threads)
            assert threaded == ["counted", "fast_in", "lookup", "quiet_in", "slow_in", "where"]
            # the system's own components stay on the loop: the checkpoint spout's barriers
            # must pass backpressure (RELIABILITY D14), which only the loop's round allows
            assert [s.component for s in worker.round.barrier_spouts] == [CHECKPOINT_SPOUT]
            slow.feed(["wait"], msg_id="held")
            assert wait_real(lambda: RECORD["gated.entered"], 10)
            for i in range(20):
                fast.feed([i], msg_id=i)
            # the held lookup has a thread of its own: the rest of the worker flows
            assert wait_real(lambda: len(fast.acked) == 20, 3)
            GATES[name].set()
            tracked.wait_idle(timeout=30)
            assert slow.acked == ["held"]
    finally:
        GATES[name].set()
    assert RECORD["thread.where"] and all(n.startswith("squall-task-where-")
                                          for n in RECORD["thread.where"])
    assert set(RECORD["thread.looped"]) == {"squall-worker-0"}
