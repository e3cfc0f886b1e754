"""Per-stream figures (issue 31): emitted and transferred per output stream, executed, acked
and failed per input stream, as Storm's UI shows them on the component page."""

from __future__ import annotations

import pytest

from squall import Bolt, Config, Fields, LocalCluster, Spout, TopologyBuilder
from squall.testing import tracked_topology

N = 300


class TwoStreams(Spout):
    """Emits 0..N-1: multiples of 3 on ``threes``, the rest on ``others``."""

    def open(self, conf, context, collector):
        self.collector, self.i = collector, 0

    def next_tuple(self):
        if self.i < N:
            stream = "threes" if self.i % 3 == 0 else "others"
            self.collector.emit([self.i], stream=stream, msg_id=self.i)
            self.i += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"), stream="threes")
        declarer.declare(Fields("n"), stream="others")


class Judge(Bolt):
    """Reads both streams; fails those of ``others`` ending in 1, re-emits evens on ``evens``."""

    def prepare(self, conf, context, collector):
        self.collector, self.failed = collector, set()

    def execute(self, tup):
        n = tup["n"]
        if tup.stream == "others" and n % 10 == 1 and n not in self.failed:
            self.failed.add(n)
            self.collector.fail(tup)
            return
        if n % 2 == 0:
            self.collector.emit([n], anchors=tup, stream="evens")
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"), stream="evens")
        declarer.declare(Fields("n"), stream="unused")


class Sink(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


def topology():
    b = TopologyBuilder()
    b.set_spout("numbers", TwoStreams(), 1)
    judge = b.set_bolt("judge", Judge(), 2)
    judge.shuffle_grouping("numbers", "threes").shuffle_grouping("numbers", "others")
    b.set_bolt("sink", Sink(), 2).shuffle_grouping("judge", "evens")
    b.set_bolt("copy", Sink(), 1).all_grouping("judge", "evens")
    return b.create_topology()


def run(rate):
    conf = Config()
    conf.set_num_workers(2)
    conf["topology.stats.sample.rate"] = rate
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "streams", conf, topology())
        tracked.wait_idle(timeout=60, trees=True)
        info = cluster.get_topology_info("streams")
        cluster.kill_topology("streams")
    return info["components"]


def test_output_streams_are_counted_exactly():
    comps = run(0.05)
    outs = {r["stream"]: r for r in comps["numbers"]["streams"]["outputs"]}
    assert comps["numbers"]["emitted"] == N  # the spout does not replay what fails
    assert outs["threes"]["emitted"] == N // 3
    assert outs["others"]["emitted"] == N - N // 3
    assert outs["threes"]["transferred"] == outs["threes"]["emitted"]
    judge = {r["stream"]: r for r in comps["judge"]["streams"]["outputs"]}
    evens = judge["evens"]
    # sink (shuffle) and copy (all) each get every even: two copies of each emit
    assert evens["emitted"] == comps["judge"]["emitted"] and evens["transferred"] == 2 * evens["emitted"]
    assert judge["unused"]["emitted"] == 0


def test_input_streams_at_full_sampling_are_exact():
    comps = run(1.0)
    inputs = {(r["component"], r["stream"]): r for r in comps["judge"]["streams"]["inputs"]}
    threes, others = inputs[("numbers", "threes")], inputs[("numbers", "others")]
    assert threes["executed"] == N // 3 and threes["failed"] == 0 and threes["acked"] == N // 3
    failed = len([n for n in range(N) if n % 3 and n % 10 == 1])
    assert others["failed"] == failed
    assert others["executed"] == N - N // 3 and others["acked"] == N - N // 3 - failed
    assert threes["execute_latency_ms"] is not None and others["process_latency_ms"] is not None
    sink = comps["sink"]["streams"]["inputs"]
    assert [(r["component"], r["stream"], r["executed"]) for r in sink] == [
        ("judge", "evens", comps["sink"]["executed"])]


@pytest.mark.parametrize("rate", [0.05])
def test_sampled_input_streams_add_up_to_the_totals(rate):
    comps = run(rate)
    rows = comps["judge"]["streams"]["inputs"]
    assert {(r["component"], r["stream"]) for r in rows} == {("numbers", "threes"), ("numbers", "others")}
    for key in ("executed", "acked"):
        total = sum(r[key] for r in rows)
        assert abs(total - comps["judge"][key]) <= 2, (key, rows)  # rounding per task only
    by = {r["stream"]: r["executed"] for r in rows}
    assert by["others"] > by["threes"]  # about twice as many
