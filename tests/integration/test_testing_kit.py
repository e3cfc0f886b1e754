"""Storm's testing kit: simulated time drives timeouts, ticks and reset_timeout; FeederSpout;
tracked topologies that know when they are idle; test tuples."""

import pytest

from squall import BasicBolt, Bolt, Config, Fields, LocalCluster, Spout, TopologyBuilder
from squall.runtime import clock
from squall.testing import FeederSpout, simulated_time, test_tuple, tracked_topology
from tests.integration.components import RECORD, NeverAckBolt, TickBolt, record


def conf(workers=1, **extra):
    c = Config()
    c.set_num_workers(workers)
    c.update(extra)
    return c


class Split(BasicBolt):
    def execute(self, tup, collector):
        for word in tup["sentence"].split():
            collector.emit([word])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class Count(BasicBolt):
    def prepare(self, conf, context):
        self.counts = {}

    def execute(self, tup, collector):
        word = tup["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        record("count", (word, self.counts[word]))

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


def word_count(feeder):
    b = TopologyBuilder()
    b.set_spout("sentences", feeder, 1)
    b.set_bolt("split", Split(), 2).shuffle_grouping("sentences")
    b.set_bolt("count", Count(), 2).fields_grouping("split", Fields("word"))
    return b.create_topology()


def test_wait_idle_returns_when_every_tuple_is_processed_and_every_tree_decided():
    feeder = FeederSpout(Fields("sentence"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "wc", conf(2), word_count(feeder))
        for i in range(50):
            feeder.feed(["the cat the dog"], msg_id=i)
        tracked.wait_idle(timeout=30)
        # exact at that moment, without polling: every sentence's tree decided
        assert sorted(feeder.acked) == list(range(50))
        assert len(RECORD["count"]) == 200
        assert max(c for w, c in RECORD["count"] if w == "the") == 100
        feeder.feed(["one more"], msg_id="x")
        tracked.wait_idle(timeout=30)
        assert feeder.acked[-1] == "x" and len(RECORD["count"]) == 202


def test_wait_idle_returns_while_a_bolt_holds_a_tree_and_the_timeout_decides_it():
    # Storm's trackedWait: processed, not necessarily decided (a held tree waits for its timeout)
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("spout", feeder, 1)
    b.set_bolt("hold", NeverAckBolt(), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(1), b.create_topology())
        feeder.feed([1], msg_id=1)
        tracked.wait_idle(timeout=10)
        assert RECORD["never.got"] and feeder.acked == [] and feeder.failed == []
        cluster.advance_time(46)  # the timeout decides it
        tracked.wait_idle(timeout=10)
        assert feeder.failed == [1]


class Endless(Spout):
    def open(self, conf, context, collector):
        self.collector = collector

    def next_tuple(self):
        self.collector.emit([1])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_wait_idle_raises_while_a_spout_keeps_emitting():
    b = TopologyBuilder()
    b.set_spout("spout", Endless(), 1)
    b.set_bolt("hold", NeverAckBolt(), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(1), b.create_topology())
        with pytest.raises(TimeoutError):
            tracked.wait_idle(timeout=0.5)


def test_a_feed_without_msg_id_is_tracked_under_a_fresh_id():
    feeder = FeederSpout(Fields("sentence"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "wc", conf(1), word_count(feeder))
        feeder.feed(["a b"])
        feeder.feed(["c"])
        tracked.wait_idle(timeout=30)
        assert len(feeder.acked) == 2 and len(set(feeder.acked)) == 2
        assert all(isinstance(m, str) and len(m) == 36 for m in feeder.acked)


def test_message_timeout_on_simulated_time():
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("spout", feeder, 1)
    b.set_bolt("hold", NeverAckBolt(), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(2, **{"topology.message.timeout.secs": 30}),
                                   b.create_topology())
        feeder.feed([1], msg_id="m")
        cluster.wait_quiet()
        assert RECORD["never.got"]
        cluster.advance_time(29)
        assert feeder.failed == []  # not before the timeout
        cluster.advance_time(17)  # rotating buckets: failed between T and 1.5 T
        assert feeder.failed == ["m"]
        assert tracked.info()["components"]["spout"]["failed"] == 1


def test_ticks_on_simulated_time_arrive_exactly_once_per_period():
    b = TopologyBuilder()
    b.set_spout("spout", FeederSpout(Fields("value")), 1)
    b.set_bolt("tick", TickBolt(freq=10), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1), b.create_topology())
        cluster.advance_time(9)
        assert RECORD["tick.at"] == []  # the first tick comes one period after prepare
        cluster.advance_time(26)
        assert RECORD["tick.at"] == [10.0, 20.0, 30.0]


class HoldThenAck(Bolt):
    """Holds each tuple, resetting its timeout on every tick, and acks it after ``hold`` s."""

    def __init__(self, hold):
        self.hold = hold

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.held = []

    def execute(self, tup):
        if not tup.is_tick():
            self.held.append((tup, clock.monotonic()))
            return
        for t, since in list(self.held):
            if clock.monotonic() - since >= self.hold:
                self.collector.ack(t)
                self.held.remove((t, since))
            else:
                self.collector.reset_timeout(t)

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": 5}


@pytest.mark.parametrize("workers", [1, 2])
def test_reset_timeout_keeps_a_held_tuple_alive_for_many_timeouts(workers):
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("spout", feeder, 1)
    b.set_bolt("hold", HoldThenAck(hold=100), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(workers, **{"topology.message.timeout.secs": 10}),
                                   b.create_topology())
        feeder.feed([1], msg_id=1)
        cluster.wait_quiet()
        cluster.advance_time(99)
        assert feeder.failed == [] and feeder.acked == []
        cluster.advance_time(6)
        tracked.wait_idle()
        assert feeder.acked == [1] and feeder.failed == []


def test_without_reset_timeout_the_same_hold_fails():
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("spout", feeder, 1)
    b.set_bolt("hold", NeverAckBolt(), 1).shuffle_grouping("spout")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(1, **{"topology.message.timeout.secs": 10}), b.create_topology())
        feeder.feed([1], msg_id=1)
        cluster.advance_time(16)
        assert feeder.failed == [1]


def test_advance_time_needs_simulated_time():
    with LocalCluster() as cluster:
        with pytest.raises(RuntimeError, match="simulated_time"):
            cluster.advance_time(1)


def test_simulated_time_cannot_nest_and_clocks_return_to_real_time():
    with simulated_time() as sim:
        assert clock.simulating() and clock.monotonic() == 0.0
        sim.advance(2.5)
        assert clock.monotonic() == 2.5 and clock.time_ms() % 10_000 == 2_500
        with pytest.raises(RuntimeError, match="already on"):
            with simulated_time():
                pass
    assert not clock.simulating() and clock.monotonic() > 0


def test_a_feeder_refuses_values_that_do_not_match_its_fields():
    with pytest.raises(ValueError, match="declares 2 fields"):
        FeederSpout(Fields("a", "b")).feed([1])


class Exclaim(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup["word"] + "!!!"], anchors=tup)
        self.collector.ack(tup)


class Collected:
    def __init__(self):
        self.emitted, self.acked = [], []

    def emit(self, values, anchors=None, stream="default"):
        self.emitted.append(values)
        return []

    def ack(self, tup):
        self.acked.append(tup)


def test_test_tuple_unit_tests_a_bolt_without_a_cluster():
    tup = test_tuple(["nathan"], fields=Fields("word"), component="words", stream="default", task=3)
    assert (tup["word"], tup.component, tup.stream, tup.task) == ("nathan", "words", "default", 3)
    assert not tup.is_tick()
    bolt, collector = Exclaim(), Collected()
    bolt.prepare({}, None, collector)
    bolt.execute(tup)
    assert collector.emitted == [["nathan!!!"]] and collector.acked == [tup]
    assert list(test_tuple([1, 2]).fields) == ["field1", "field2"]
    with pytest.raises(ValueError, match="2 values"):
        test_tuple([1, 2], fields=Fields("one"))


def test_wait_idle_sees_a_fed_tuple_behind_a_long_spout_wait():
    """The quiet check asks a waiting spout again, so a tuple fed during its wait counts."""
    feeder = FeederSpout(Fields("sentence"))
    c = conf(1, **{"topology.spout.wait.progressive.level3.sleep.millis": 60_000})
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "wc", c, word_count(feeder))
        tracked.wait_idle()  # the feeder was asked, found nothing, and now waits a minute
        feeder.feed(["a b"], msg_id=1)
        tracked.wait_idle(timeout=30)
        assert feeder.acked == [1] and len(RECORD["count"]) == 2


def test_a_frame_waiting_in_a_workers_queue_is_not_quiet():
    """A frame sent after a worker's last poll is work to come, though no task holds it yet.

    The quiet check's snapshot runs before the round's poll, so without looking at the
    transport it would call such a worker idle (wait_idle once returned with 51 of 60 trees
    decided under load).
    """
    feeder = FeederSpout(Fields("sentence"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "wc", conf(2), word_count(feeder))
        tracked.wait_idle(timeout=30)
        w0, w1 = cluster.workers("wc")

        def send_then_look():
            # on w0's loop thread, so w0 cannot poll between the send and the snapshot
            assert w1.transport.send(w0.index, b"not a frame")
            return w0.snapshot()

        assert w0.query(send_then_look, 10)[1] is False
        tracked.wait_idle(timeout=30)  # the bad frame is dropped and counted; quiet again
