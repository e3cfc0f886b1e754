"""The opt-in ``execute_batch(tuples)`` of rich bolts: runs of input, per-tuple acking as before."""

from __future__ import annotations

import pytest

from squall import Bolt, Fields, LocalCluster, TopologyBuilder
from tests.integration.components import RECORD, ListSpout, record
from tests.integration.test_acking import conf, run_until_idle

RECORDING = "tests.integration.hook_components.RecordingHook"


class BatchDoubler(Bolt):
    """Emits ``2 * value`` anchored to each input and acks it; records each call's size."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        raise AssertionError("execute_batch is defined: execute must not be called")

    def execute_batch(self, tuples):
        record("batch.size", len(tuples))
        for tup in tuples:
            self.collector.emit([tup[0] * 2], anchors=tup)
            self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("doubled"))


class Sink(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        record("sink", tup[0])
        self.collector.ack(tup)


class AckEvenThenRaise(Bolt):
    """Acks the even values of its batch, then raises."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute_batch(self, tuples):
        for tup in tuples:
            if tup[0] % 2 == 0:
                self.collector.ack(tup)
        raise RuntimeError("batch broke")

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("doubled"))


class Holder(Bolt):
    """Acks nothing: the trees of its inputs can only time out."""

    def execute_batch(self, tuples):
        record("held", len(tuples))


def pipeline(n, workers=1, threaded=False, batch_bolt=None, **extra):
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(n)], replay=False))
    b.set_bolt("double", batch_bolt or BatchDoubler(), 2).shuffle_grouping("spout") \
        .set_threaded(threaded)
    b.set_bolt("sink", Sink()).shuffle_grouping("double")
    return b.create_topology(), conf(workers=workers, **extra)


@pytest.mark.parametrize("workers, threaded", [(1, False), (2, False), (1, True)])
def test_every_tree_completes_through_a_batch_bolt(workers, threaded):
    topology, c = pipeline(300, workers=workers, threaded=threaded)
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, topology, c, "batch").info()
        cluster.kill_topology("batch")
    assert sorted(m for _, m in RECORD["spout.acked"]) == list(range(300))
    assert RECORD["spout.failed"] == []
    assert sorted(RECORD["sink"]) == [2 * i for i in range(300)]
    assert sum(RECORD["batch.size"]) == 300
    # the spout emits up to 64 tuples a round: the bolt gets them in runs, not one by one
    assert max(RECORD["batch.size"]) > 1
    double = info["components"]["double"]
    assert double["executed"] == 300 and double["acked"] == 300
    assert double["execute_latency_ms"] >= 0.0


def test_a_raising_batch_fails_only_the_inputs_it_left_open():
    topology, c = pipeline(40, batch_bolt=AckEvenThenRaise())
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, topology, c, "batch-raise").info()
        cluster.kill_topology("batch-raise")
    assert sorted(m for _, m in RECORD["spout.acked"]) == list(range(0, 40, 2))
    assert sorted(m for _, m, _ in RECORD["spout.failed"]) == list(range(1, 40, 2))
    assert any("batch broke" in e["message"] for e in info["errors"])


def test_hooks_see_one_execute_per_tuple_of_a_batch():
    topology, c = pipeline(50, **{"topology.auto.task.hooks": [RECORDING]})
    with LocalCluster() as cluster:
        run_until_idle(cluster, topology, c, "batch-hooks")
        cluster.kill_topology("batch-hooks")
    events = RECORD["hook.bolt_execute"]
    assert all(latency is not None and latency >= 0.0 for *_, latency in events)
    assert sorted(v for _, (v,), _ in events) == sorted(list(range(50)) + [2 * i for i in range(50)])
    # 50 executes of the batch bolt and 50 of the sink, each with its own tuple
    assert len(RECORD["hook.bolt_execute"]) == 100
    acked = sorted(v for _, (v,), _ in RECORD["hook.bolt_ack"])
    assert acked == sorted(list(range(50)) + [2 * i for i in range(50)])


def test_a_batch_bolts_unacked_inputs_time_out():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(5)], replay=False))
    b.set_bolt("hold", Holder()).shuffle_grouping("spout")
    from squall.testing import simulated_time

    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("batch-hold", conf(workers=1, **{"topology.message.timeout.secs": 10}),
                                b.create_topology())
        cluster.advance_time(1)
        assert sum(RECORD["held"]) == 5 and RECORD["spout.failed"] == []
        cluster.advance_time(11)
        cluster.advance_time(11)
        assert sorted(m for _, m, _ in RECORD["spout.failed"]) == list(range(5))
        cluster.kill_topology("batch-hold")


class BatchSplit(Bolt):
    """Splits sentences a run at a time; records every stream its runs hold."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute_batch(self, tuples):
        for tup in tuples:
            record("split.stream", tup.stream)
            for word in tup[0].split():
                self.collector.emit([word], anchors=tup)
            self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


def test_checkpoints_pass_a_batched_bolt_without_entering_its_runs():
    from squall.state import memory
    from squall.testing import tracked_topology
    from tests.integration.components import StatefulCount
    from tests.integration.test_stateful import SENTENCES, committed_counts, expected
    from tests.integration.test_stateful import conf as stateful_conf

    memory.clear()
    c = stateful_conf({"topology.state.provider": "squall.state.memory.InMemoryStateProvider"})
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(SENTENCES), 2)
    b.set_bolt("split", BatchSplit(), 2).shuffle_grouping("spout")
    b.set_bolt("count", StatefulCount(), 2).fields_grouping("split", Fields("word"))
    with LocalCluster() as cluster:
        tracked_topology(cluster, "ckpt", c, b.create_topology()).wait_idle(timeout=60, trees=True)
        cluster.kill_topology("ckpt")
    assert set(RECORD["split.stream"]) == {"default"}
    assert committed_counts(c, "ckpt") == expected(SENTENCES)
