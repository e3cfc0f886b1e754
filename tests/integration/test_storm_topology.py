"""Storm's TopologyIntegrationTest (storm-core), ported case by case to squall's API.

Each test keeps the Storm test's name (snake_case) and its assertions; where squall differs
by design the comment says so. Simulated time and tracked topologies replace Storm's
``withSimulatedTime`` / ``withTracked`` cluster builders.
"""

from __future__ import annotations

import pytest

from squall import Bolt, Config, Fields, InvalidTopologyError, LocalCluster, Spout, TopologyBuilder
from squall.testing import FeederSpout, MockedSources, complete_topology, simulated_time, tracked_topology


class WordSpout(Spout):
    """Storm's TestWordSpout: declares ``word``; replaced by mocked sources here."""

    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class WordCounter(Bolt):
    """Storm's TestWordCounter: ``[word, count so far]``."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = {}

    def execute(self, tup):
        word = tup["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.emit([word, self.counts[word]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


class GlobalCount(Bolt):
    """Storm's TestGlobalCount: the number of tuples seen."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.count = 0

    def execute(self, tup):
        self.count += 1
        self.collector.emit([self.count], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("global-count"))


class AggregatesCounter(Bolt):
    """Storm's TestAggregatesCounter: the sum of the latest count of every word."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = {}

    def execute(self, tup):
        self.counts[tup[0]] = tup[1]
        self.collector.emit([sum(self.counts.values())], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("agg-global"))


class EmitTaskIndexBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.index = context.get_this_task_index()

    def execute(self, tup):
        self.collector.emit([self.index], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("tid"))


class AckEveryOtherBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.state = True

    def execute(self, tup):
        if self.state:
            self.collector.ack(tup)
        self.state = not self.state

    def declare_output_fields(self, declarer):
        pass


class ResetTimeoutBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counter = 1
        self.first = None

    def execute(self, tup):
        if self.counter == 1:
            self.first = tup
        elif self.counter == 2:
            self.collector.reset_timeout(self.first)
        elif self.counter == 5:
            self.collector.ack(self.first)
            self.collector.ack(tup)
        else:
            self.collector.reset_timeout(self.first)
            self.collector.ack(tup)
        self.counter += 1

    def declare_output_fields(self, declarer):
        pass


class IdentityBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values, anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("num"))


class BranchingBolt(Bolt):
    def __init__(self, branches):
        self.branches = branches

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        for i in range(self.branches):
            self.collector.emit([i], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("num"))


class AggBolt(Bolt):
    """Holds tuples until it has ``amount``, then emits one anchored to all and acks them."""

    def __init__(self, amount):
        self.amount = amount

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen = []

    def execute(self, tup):
        self.seen.append(tup)
        if len(self.seen) == self.amount:
            self.collector.emit([1], anchors=self.seen)
            for t in self.seen:
                self.collector.ack(t)
            self.seen = []

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("num"))


class AckBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class DupAnchorBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([1], anchors=[tup, tup])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("num"))


class ConfBolt(Bolt):
    """Storm's TestConfBolt: answers each input key with the value this task's conf holds."""

    def __init__(self, component_conf=None):
        self.component_conf = component_conf

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.conf = conf

    def execute(self, tup):
        self.collector.emit([tup[0], self.conf.get(tup[0])], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("conf", "value"))

    def get_component_configuration(self):
        return self.component_conf


class PlannerSpout(Spout):
    """Storm's TestPlannerSpout: declares the given fields, emits nothing by itself."""

    def __init__(self, fields):
        self.fields = fields

    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(self.fields)


class AckCounter:
    """Storm's AckTrackingFeeder: a feeder whose acks are counted between assertions."""

    def __init__(self, *fields):
        self.spout = FeederSpout(Fields(*fields))
        self.seen = 0

    def feed(self, values):
        self.spout.feed(values)

    def assert_num_acks(self, n):
        got = len(self.spout.acked) - self.seen
        self.seen += got
        assert got == n


def word_tuples(*words):
    return MockedSources({"1": [[w] for w in words]})


def fused(bolt: Bolt, chained: bool) -> Bolt:
    """``bolt``, or with ``chained`` the same bolt of a subclass that sets ``chainable = True``.

    The acking tests below run twice: as Storm's, and with the bolts fused into chains
    (issue 28), which must not change what a spout is told, nor when.
    """
    if not chained:
        return bolt
    cls = type(bolt)
    sub = CHAINABLE.get(cls)
    if sub is None:
        sub = CHAINABLE[cls] = type(f"Chained{cls.__name__}", (cls,), {"chainable": True})
    bolt.__class__ = sub
    return bolt


CHAINABLE: dict[type, type] = {}


def assert_chains(info: dict, chained: bool, chains: list) -> None:
    """The chains the chained run must form; none unchained (rich bolts do not chain)."""
    assert info["chains"] == (chains if chained else [])


@pytest.mark.parametrize("workers", [1, 2])
def test_basic_topology(workers):
    b = TopologyBuilder()
    b.set_spout("1", WordSpout(), 3)
    b.set_bolt("2", WordCounter(), 4).fields_grouping("1", Fields("word"))
    b.set_bolt("3", GlobalCount()).global_grouping("1")
    b.set_bolt("4", AggregatesCounter()).global_grouping("2")
    conf = Config()
    conf.set_num_workers(workers)
    with simulated_time():
        result = complete_topology(b.create_topology(), conf=conf,
                                   mocked_sources=word_tuples("nathan", "bob", "joey", "nathan"))
    assert sorted(result.emitted("1")) == [["bob"], ["joey"], ["nathan"], ["nathan"]]
    assert sorted(result.emitted("2")) == [["bob", 1], ["joey", 1], ["nathan", 1], ["nathan", 2]]
    assert result.emitted("3") == [[1], [2], [3], [4]]
    assert result.emitted("4") == [[1], [2], [3], [4]]


def test_multi_tasks_per_cluster():
    b = TopologyBuilder()
    b.set_spout("1", WordSpout())
    b.set_bolt("2", EmitTaskIndexBolt(), 3).all_grouping("1").add_configuration("topology.tasks", 6)
    with simulated_time():
        result = complete_topology(b.create_topology(), mocked_sources=word_tuples("a"))
    assert sorted(result.emitted("2")) == [[0], [1], [2], [3], [4], [5]]


@pytest.mark.parametrize("chained", [False, True])
def test_timeout(chained):
    feeder = FeederSpout(Fields("field1"))
    b = TopologyBuilder()
    b.set_spout("1", feeder)
    bolt = b.set_bolt("2", fused(AckEveryOtherBolt(), chained))
    # Storm's global grouping; chains form on shuffle only (one task: the same delivery)
    (bolt.shuffle_grouping if chained else bolt.global_grouping)("1")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("timeout-tester", {"topology.message.timeout.secs": 10}, b.create_topology())
        assert_chains(cluster.get_topology_info("timeout-tester"), chained, [["1", "2"]])
        cluster.advance_time(11)
        feeder.feed(["a"], 1)
        feeder.feed(["b"], 2)
        feeder.feed(["c"], 3)
        cluster.advance_time(9)
        assert sorted(feeder.acked) == [1, 3]
        assert 2 not in feeder.failed
        cluster.advance_time(12)
        assert feeder.failed == [2]


@pytest.mark.parametrize("chained", [False, True])
def test_reset_timeout(chained):
    feeder = FeederSpout(Fields("field1"))
    b = TopologyBuilder()
    b.set_spout("1", feeder)
    bolt = b.set_bolt("2", fused(ResetTimeoutBolt(), chained))
    (bolt.shuffle_grouping if chained else bolt.global_grouping)("1")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("reset-timeout-tester", {"topology.message.timeout.secs": 10},
                                b.create_topology())
        assert_chains(cluster.get_topology_info("reset-timeout-tester"), chained, [["1", "2"]])
        feeder.feed(["a"], 1)  # its timeout is reset by the tuples after it
        feeder.feed(["b"], 2)  # never acked: times out
        cluster.advance_time(9)
        feeder.feed(["c"], 3)
        cluster.wait_quiet()
        assert 3 in feeder.acked
        cluster.advance_time(9)
        feeder.feed(["d"], 4)
        cluster.wait_quiet()
        assert 4 in feeder.acked
        cluster.advance_time(2)
        # twice the message timeout: the second tuple expired; the first would have too
        # without reset_timeout
        assert feeder.failed == [2]
        feeder.feed(["e"], 5)
        cluster.wait_quiet()
        assert 5 in feeder.acked
        assert 1 not in feeder.failed
        assert 1 in feeder.acked


def _word_count(source, fields, stream="default"):
    b = TopologyBuilder()
    b.set_spout("1", WordSpout(), 3)
    b.set_bolt("2", WordCounter(), 4).fields_grouping(source, Fields(*fields), stream=stream)
    return b


@pytest.mark.parametrize("source,fields,stream,valid", [
    ("1", ["word"], "default", True),
    ("3", ["word"], "default", False),                     # no such component
    ("1", ["non-exists-field"], "default", False),         # no such field
    ("1", ["word"], "non-exists-stream", False),           # no such stream
])
def test_validate_topology_structure(source, fields, stream, valid):
    def attempt():
        topology = _word_count(source, fields, stream).create_topology()
        conf = Config()
        conf.set_num_workers(2)
        with simulated_time():
            return complete_topology(topology, conf=conf,
                                     mocked_sources=word_tuples("nathan", "bob", "joey", "nathan"))
    if valid:
        result = attempt()  # it runs, and fields grouping counts each word on one task
        assert sorted(result.emitted("2")) == [["bob", 1], ["joey", 1], ["nathan", 1], ["nathan", 2]]
    else:
        with pytest.raises(InvalidTopologyError):
            attempt()


def test_system_stream():
    # every component has the __system stream: subscribing to it is valid (and carries nothing here)
    b = TopologyBuilder()
    b.set_spout("1", WordSpout(), 3)
    b.set_bolt("2", IdentityBolt(), 1).fields_grouping("1", Fields("word")).global_grouping("1", "__system")
    conf = Config()
    conf.set_num_workers(2)
    with simulated_time():
        result = complete_topology(b.create_topology(), conf=conf, mocked_sources=word_tuples("a", "b", "c"))
    assert sorted(result.emitted("2")) == [["a"], ["b"], ["c"]]


@pytest.mark.parametrize("chained", [False, True])
def test_acking(chained):
    feeder1, feeder2, feeder3 = AckCounter("num"), AckCounter("num"), AckCounter("num")
    b = TopologyBuilder()
    b.set_spout("1", feeder1.spout)
    b.set_spout("2", feeder2.spout)
    b.set_spout("3", feeder3.spout)
    b.set_bolt("4", fused(BranchingBolt(2), chained)).shuffle_grouping("1")
    b.set_bolt("5", fused(BranchingBolt(4), chained)).shuffle_grouping("2")
    b.set_bolt("6", fused(BranchingBolt(1), chained)).shuffle_grouping("3")
    agg = b.set_bolt("7", fused(AggBolt(3), chained))
    agg.shuffle_grouping("4").shuffle_grouping("5").shuffle_grouping("6")
    b.set_bolt("8", fused(BranchingBolt(2), chained)).shuffle_grouping("7")
    b.set_bolt("9", fused(AckBolt(), chained)).shuffle_grouping("8")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "acking-test1", {}, b.create_topology())
        assert_chains(tracked.info(), chained, [["1", "4"], ["2", "5"], ["3", "6"], ["7", "8", "9"]])
        cluster.advance_time(11)
        feeder1.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(0)
        feeder2.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(1)
        feeder2.assert_num_acks(1)
        feeder1.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(0)
        feeder1.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(1)
        feeder3.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(0)
        feeder3.assert_num_acks(0)
        feeder2.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(1)
        feeder2.assert_num_acks(1)
        feeder3.assert_num_acks(1)


@pytest.mark.parametrize("chained", [False, True])
def test_ack_branching(chained):
    feeder = AckCounter("num")
    b = TopologyBuilder()
    b.set_spout("1", feeder.spout)
    b.set_bolt("2", fused(IdentityBolt(), chained)).shuffle_grouping("1")
    b.set_bolt("3", fused(IdentityBolt(), chained)).shuffle_grouping("1")
    b.set_bolt("4", AggBolt(4)).shuffle_grouping("2").shuffle_grouping("3")
    if chained:
        # the spout feeds two bolts, so neither is fused with it; the join's downstream is
        b.set_bolt("5", fused(AckBolt(), chained)).shuffle_grouping("4")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "test-acking2", {}, b.create_topology())
        assert_chains(tracked.info(), chained, [["4", "5"]])
        cluster.advance_time(11)
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(0)
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(2)


class ExecuteRecorder(Bolt):
    executed: list = []

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        ExecuteRecorder.executed.append(tup.values)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


class CalledSpout(Spout):
    called: list = []

    def next_tuple(self):
        CalledSpout.called.append(1)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("val"))


def test_submit_inactive_topology():
    feeder = FeederSpout(Fields("field1"))
    b = TopologyBuilder()
    b.set_spout("1", feeder)
    b.set_spout("2", CalledSpout())
    b.set_bolt("3", ExecuteRecorder()).global_grouping("1")
    ExecuteRecorder.executed.clear()
    CalledSpout.called.clear()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("test", {"topology.message.timeout.secs": 10}, b.create_topology(),
                                inactive=True)
        cluster.advance_time(11)
        feeder.feed(["a"], 1)
        cluster.advance_time(9)
        assert ExecuteRecorder.executed == []
        assert CalledSpout.called == []
        cluster.activate("test")
        cluster.advance_time(12)
        assert feeder.acked == [1]
        assert ExecuteRecorder.executed == [["a"]]
        assert CalledSpout.called


@pytest.mark.parametrize("chained", [False, True])
def test_acking_self_anchor(chained):
    feeder = AckCounter("num")
    b = TopologyBuilder()
    b.set_spout("1", feeder.spout)
    b.set_bolt("2", fused(DupAnchorBolt(), chained)).shuffle_grouping("1")
    b.set_bolt("3", fused(AckBolt(), chained)).shuffle_grouping("2")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "test", {}, b.create_topology())
        assert_chains(tracked.info(), chained, [["1", "2", "3"]])
        cluster.advance_time(11)
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(1)
        feeder.feed([1])
        feeder.feed([1])
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(3)


def test_component_specific_config():
    # Storm's case without the Kryo registrations (squall has no Kryo)
    b = TopologyBuilder()
    b.set_spout("1", PlannerSpout(Fields("conf")))
    component_conf = {"fake.config": 123, "topology.max.task.parallelism": 20,
                      "topology.max.spout.pending": 30}
    (b.set_bolt("2", ConfBolt(component_conf)).shuffle_grouping("1")
     .set_max_task_parallelism(2).add_configuration("fake.config2", 987))
    keys = ["fake.config", "topology.max.task.parallelism", "topology.max.spout.pending", "fake.config2"]
    with simulated_time():
        sources = MockedSources({"1": [[k] for k in keys]})
        result = complete_topology(b.create_topology(), mocked_sources=sources)
    assert dict(map(tuple, result.emitted("2"))) == {
        "fake.config": 123, "fake.config2": 987,
        "topology.max.task.parallelism": 2, "topology.max.spout.pending": 30}
