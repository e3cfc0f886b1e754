"""Activate, deactivate, kill, rebalance, ticks and errors on LocalCluster."""

import time

import pytest

from squall import (
    AlreadyAliveError,
    BasicBolt,
    Bolt,
    Fields,
    LocalCluster,
    NotAliveError,
    Spout,
    TopologyBuilder,
    TopologyStartError,
)
from squall.runtime import clock
from squall.testing import simulated_time
from tests.integration.components import (
    RECORD,
    CountBolt,
    ListSpout,
    RaiseOnBolt,
    SplitBolt,
    TickBolt,
    TypeRecorder,
    record,
)
from tests.integration.test_acking import conf, run_until_idle


class CountingSpout(Spout):
    """Counts next_tuple calls; emits nothing."""

    def open(self, conf, context, collector):
        pass

    def next_tuple(self):
        record("calls", clock.monotonic())

    def activate(self):
        record("activate", clock.monotonic())

    def deactivate(self):
        record("deactivate", clock.monotonic())

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("x"))


def counting_topology():
    b = TopologyBuilder()
    b.set_spout("spout", CountingSpout())
    return b.create_topology()


def test_deactivate_stops_next_tuple_and_activate_resumes_it():
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1), counting_topology())
        cluster.wait_quiet()  # quiet includes: the spout was asked and emitted nothing
        assert RECORD["calls"]
        cluster.deactivate("t")
        assert RECORD["deactivate"]  # told before deactivate returned
        frozen = len(RECORD["calls"])
        cluster.wait_quiet()  # whole rounds of the worker ran
        assert len(RECORD["calls"]) == frozen
        assert cluster.get_topology_info("t")["status"] == "INACTIVE"
        cluster.activate("t")
        cluster.wait_quiet()
        assert len(RECORD["calls"]) > frozen
        assert cluster.get_topology_info("t")["status"] == "ACTIVE"
    assert len(RECORD["activate"]) == 2


def test_submitted_inactive_calls_no_next_tuple_until_activated():
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1, **{"squall.topology.start.inactive": True}),
                                counting_topology())
        cluster.wait_quiet()
        assert RECORD["calls"] == [] and RECORD["activate"] == []
        cluster.activate("t")
        cluster.wait_quiet()
        assert RECORD["calls"]


def test_kill_deactivates_then_closes_spouts_and_cleans_up_bolts():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([["a b"], ["b c"]]), 2)
    b.set_bolt("split", SplitBolt(), 1).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 2).fields_grouping("split", Fields("word"))
    with LocalCluster() as cluster:
        run_until_idle(cluster, b.create_topology(), conf(2))
        assert len(RECORD["spout.acked"]) == 2
        cluster.kill_topology("t")
        assert cluster.list_topologies() == []
        with pytest.raises(NotAliveError):
            cluster.get_topology_info("t")
    assert sorted(RECORD["spout.deactivate"]) == sorted(RECORD["spout.close"])
    assert len(RECORD["spout.close"]) == 2
    counts = {}
    for _task, c in RECORD["count.cleanup"]:
        counts.update(c)
    assert counts == {"a": 1, "b": 2, "c": 1}


def test_a_name_cannot_be_submitted_twice():
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1), counting_topology())
        with pytest.raises(AlreadyAliveError, match="'t' is already running"):
            cluster.submit_topology("t", conf(1), counting_topology())


def test_ticks_arrive_at_the_configured_rate():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([]), 1)
    b.set_bolt("tick", TickBolt(freq=0.1), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1), b.create_topology())
        cluster.advance_time(1.05, increment=0.05)
    ticks = RECORD["tick.at"]
    assert RECORD["tick.prepared"] == [0.0]
    # the first tick comes one period after prepare, then one per period
    assert ticks == pytest.approx([0.1 * i for i in range(1, 11)])


def test_topology_tick_frequency_applies_to_every_bolt():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([]), 1)
    b.set_bolt("tick", TickBolt(), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1, **{"topology.tick.tuple.freq.secs": 5}), b.create_topology())
        cluster.advance_time(26)
    assert RECORD["tick.at"] == [5.0, 10.0, 15.0, 20.0, 25.0]


def test_a_raising_bolt_is_reported_its_tuple_failed_and_the_task_carries_on():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1], [2], [3]], replay=False), 1)
    b.set_bolt("picky", RaiseOnBolt(bad=2), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, b.create_topology(), conf(2)).info()
    assert len(RECORD["spout.acked"]) == 2
    assert sorted(RECORD["raise.ok"]) == [1, 3]
    assert [m for _, m, _ in RECORD["spout.failed"]] == [1]
    (error,) = info["errors"]
    assert error["component"] == "picky"
    assert error["message"] == "RuntimeError: cannot handle 2"
    assert "raise RuntimeError" in error["traceback"]
    assert info["components"]["picky"]["errors"] == 1


class BrokenPrepare(Bolt):
    def prepare(self, conf, context, collector):
        raise OSError("database unreachable")

    def execute(self, tup):
        pass


def test_a_bolt_that_cannot_prepare_stops_the_submission_with_its_cause():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[1]]), 1)
    b.set_bolt("db", BrokenPrepare(), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        with pytest.raises(TopologyStartError, match=r"component 'db' task 1 failed to prepare: "
                                                     r"OSError: database unreachable"):
            cluster.submit_topology("t", conf(2), b.create_topology())
        assert cluster.list_topologies() == []


class RaisingSpout(Spout):
    def open(self, conf, context, collector):
        self.collector = collector
        self.n = 0

    def next_tuple(self):
        self.n += 1
        if self.n == 1:
            raise ValueError("bad record")
        if self.n < 4:
            self.collector.emit([self.n], msg_id=self.n)

    def ack(self, msg_id):
        record("raising.acked", msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


def test_a_raising_spout_is_reported_and_keeps_emitting():
    b = TopologyBuilder()
    b.set_spout("spout", RaisingSpout(), 1)
    b.set_bolt("sink", TypeRecorder(), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        errors = run_until_idle(cluster, b.create_topology(), conf(1)).info()["errors"]
    assert sorted(RECORD["raising.acked"]) == [2, 3]
    assert len(errors) == 1
    assert errors[0]["component"] == "spout"
    assert errors[0]["message"] == "ValueError: bad record"


def test_rebalance_changes_workers_and_parallelism_and_keeps_running():
    b = TopologyBuilder()
    b.set_spout("spout", CountingSpout(), 1)
    b.set_bolt("tick", TickBolt(), 2).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1), b.create_topology())
        cluster.rebalance("t", num_workers=2, parallelism={"tick": 3})
        info = cluster.get_topology_info("t")
        assert info["status"] == "ACTIVE"
        assert info["num_workers"] == 2
        assert len(info["components"]["tick"]["tasks"]) == 3
        before = len(RECORD["calls"])
        cluster.wait_quiet()
        assert len(RECORD["calls"]) > before
        with pytest.raises(Exception, match="unknown component 'nope'"):
            cluster.rebalance("t", parallelism={"nope": 2})


def test_leaving_the_with_block_kills_everything():
    cluster = LocalCluster()
    with cluster:
        cluster.submit_topology("a", conf(1), counting_topology())
        cluster.submit_topology("b", conf(2), counting_topology())
        assert {t["name"] for t in cluster.list_topologies()} == {"a", "b"}
        workers = cluster.workers("a") + cluster.workers("b")
    assert cluster.list_topologies() == []
    # every loop thread has ended: no next_tuple can come any more
    assert all(w.stopped.is_set() and not w._thread.is_alive() for w in workers)
    assert len(RECORD["deactivate"]) == 2  # one spout task per topology


SIMULATED: list = []  # the simulated clock of the test that runs ClockedBolt


class ClockedBolt(BasicBolt):
    """Each execute takes ``secs`` of the simulated clock: busy that long, on any machine."""

    def __init__(self, secs):
        self.secs = secs

    def execute(self, tup, collector):
        if self.secs:
            SIMULATED[0].advance(self.secs)

    def declare_output_fields(self, declarer):
        pass


class ClockedSpout(ListSpout):
    """A ListSpout whose every emit comes ``secs`` of the simulated clock after the last."""

    def __init__(self, items, secs):
        super().__init__(items)
        self.secs = secs

    def next_tuple(self):
        if self.queue:
            SIMULATED[0].advance(self.secs)
        super().next_tuple()


@pytest.mark.parametrize("busy", [0.004, 0.001])
def test_capacity_shows_a_bolt_that_is_busy_all_the_time(busy):
    # a tuple every 4 ms of the simulated clock, each taking ``busy`` of it in slow's execute:
    # slow is busy busy / (4 ms + busy) of the time, on any machine
    b = TopologyBuilder()
    b.set_spout("spout", ClockedSpout([[i] for i in range(400)], 0.004), 1)
    b.set_bolt("slow", ClockedBolt(busy), 1).shuffle_grouping("spout")
    b.set_bolt("idle", ClockedBolt(0.0), 1).shuffle_grouping("spout")
    # one tuple in flight: emit, execute, emit... (not rounds of 128 emits, then their executes)
    c = conf(1, **{"topology.stats.sample.rate": 1.0, "squall.metrics.window.secs": 0.3,
                   "topology.max.spout.pending": 1})
    with simulated_time() as sim, LocalCluster() as cluster:
        SIMULATED[:] = [sim]
        cluster.submit_topology("t", c, b.create_topology())
        # the clock stands still once the 400 are done: the last window that closed, in
        # the middle of the run, is what is read
        cluster.wait_quiet(trees=True)
        assert sim.monotonic() >= 400 * (0.004 + busy) - 1e-9
        comps = cluster.get_topology_info("t")["components"]
    share = busy / (0.004 + busy)
    assert comps["slow"]["capacity"] == pytest.approx(share, abs=0.05)
    assert comps["idle"]["capacity"] < 0.05


def test_info_reports_components_workers_and_metrics():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([["a b c"]] * 50), 2)
    b.set_bolt("split", SplitBolt(), 2).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 2).fields_grouping("split", Fields("word"))
    c = conf(2, **{"topology.stats.sample.rate": 1.0})
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, b.create_topology(), c).info()
    comps = info["components"]
    assert comps["spout"]["emitted"] == 50 and comps["spout"]["acked"] == 50
    assert comps["spout"]["complete_latency_ms"] > 0
    assert comps["split"]["emitted"] == 150 and comps["split"]["acked"] == 50
    assert comps["count"]["acked"] == 150 and comps["count"]["execute_latency_ms"] > 0
    assert comps["spout"]["tasks"] == [5, 6] and comps["count"]["tasks"] == [1, 2]
    assert sorted(t for w in info["workers"] for t in w["tasks"]) == list(range(1, 11))
    assert {"worker", "host", "pid", "tasks"} <= set(info["workers"][0])
    per_task = comps["count"]["by_task"]
    assert sorted(per_task) == [1, 2]
    assert sum(t["acked"] for t in per_task.values()) == 150
    assert comps["spout"]["by_task"][5]["acked"] + comps["spout"]["by_task"][6]["acked"] == 50


def test_without_ackers_a_spout_counts_each_emit_as_acked_once():
    # with no ackers a spout's tuples are acked when next_tuple returns (Storm's behaviour);
    # each is one ack in its metrics, and the bolts' counts are as with ackers
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([["a b c"]] * 50), 2)
    b.set_bolt("split", SplitBolt(), 2).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 2).fields_grouping("split", Fields("word"))
    c = conf(2, **{"topology.acker.executors": 0})
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, b.create_topology(), c).info()
    comps = info["components"]
    assert comps["spout"]["emitted"] == 50 and comps["spout"]["acked"] == 50
    assert comps["split"]["emitted"] == 150 and comps["count"]["acked"] == 150


def test_a_joined_worker_has_no_loop_thread_left():
    # the loop thread sets ``stopped`` and then still releases the waiting commands: a join
    # that returned on the event alone could leave the thread running (seen under load)
    with LocalCluster() as cluster:
        cluster.submit_topology("a", conf(1), counting_topology())
        [worker] = cluster.workers("a")
        release = worker.commands.release

        def slow_release():
            time.sleep(0.3)
            release()

        worker.commands.release = slow_release
        cluster.kill_topology("a")
        assert not worker._thread.is_alive()
