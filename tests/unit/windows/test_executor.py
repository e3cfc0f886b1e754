"""Storm's WindowedBoltExecutorTest, ported, plus acking, anchoring and tick-driven time."""

from __future__ import annotations

import pytest

from squall import Count, Duration, Fields, InvalidTopologyError, TopologyBuilder, WindowedBolt
from squall.api.components import OutputFieldsDeclarer, Spout
from squall.api.tuple import new_tuple
from squall.runtime import clock
from squall.windows import shapes
from squall.windows.executor import WindowedBoltExecutor
from tests.unit.windows.fakes import Collector, Context, tick, tup


class Recorder(WindowedBolt):
    def __init__(self) -> None:
        super().__init__()
        self.windows: list = []

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, window):
        self.windows.append(window)
        self.collector.emit([len(window.get())])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


def event_time_executor(late_stream=None, interval=100_000):
    bolt = Recorder().with_window(Duration.milliseconds(20), Duration.milliseconds(10))
    bolt.with_timestamp_field("ts").with_lag(Duration.milliseconds(5))
    bolt.with_watermark_interval(Duration.milliseconds(interval))
    if late_stream:
        bolt.with_late_tuple_stream(late_stream)
    executor = bolt.as_bolt()
    collector = Collector()
    conf = {"topology.message.timeout.secs": 100000, **executor.get_component_configuration()}
    executor.prepare(conf, Context(), collector)
    return bolt, executor, collector


def stamps(window):
    return [t["ts"] for t in window.get()]


def test_execute_without_ts():
    _, executor, _ = event_time_executor()
    with pytest.raises(ValueError, match="timestamp field 'ts'"):
        executor.execute(tup([1], fields=("a",)))


def test_execute_with_ts():
    bolt, executor, _ = event_time_executor()
    for ts in [603, 605, 607, 618, 626, 636]:
        executor.execute(tup([ts]))
    executor.watermarks.run()
    assert [stamps(w) for w in bolt.windows] == [[603, 605, 607], [603, 605, 607, 618], [618, 626]]
    assert [(w.start_timestamp, w.end_timestamp) for w in bolt.windows] == [
        (590, 610), (600, 620), (610, 630)]


def test_watermarks_come_with_ticks():
    bolt, executor, _ = event_time_executor()
    for ts in [603, 605, 607, 618, 626, 636]:
        executor.execute(tup([ts]))
    assert bolt.windows == []
    executor.execute(tick())
    assert len(bolt.windows) == 3


def test_late_tuple_stream_without_ts_is_refused():
    bolt = Recorder().with_window(Duration.milliseconds(20), Duration.milliseconds(10))
    bolt.with_late_tuple_stream("$late")
    with pytest.raises(InvalidTopologyError, match="late tuple stream needs event time"):
        bolt.as_bolt().get_component_configuration()
    with pytest.raises(ValueError, match="late tuple stream needs event time"):
        bolt.as_bolt().prepare({**bolt.window_configuration}, Context(), Collector())


def test_execute_with_late_tuple_stream():
    _, executor, collector = event_time_executor(late_stream="late")
    tuples = [tup([ts]) for ts in [603, 605, 607, 618, 626, 636, 600]]
    for t in tuples:
        executor.execute(t)
        executor.watermarks.run()
    late = [e for e in collector.emitted if e[0] == "late"]
    assert late == [("late", [[600]], tuples[-1])]
    assert tuples[-1] in collector.acked


def test_late_tuple_without_stream_is_acked_and_dropped():
    bolt, executor, collector = event_time_executor()
    executor.execute(tup([603]))
    executor.watermarks.run()
    old = tup([500])
    executor.execute(old)
    assert old in collector.acked
    assert not [e for e in collector.emitted if e[0] != "default"]


def test_late_stream_is_declared_with_field_late_tuple():
    bolt = Recorder().with_tumbling_window(Duration.seconds(1)).with_timestamp_field("ts")
    declarer = OutputFieldsDeclarer()
    bolt.with_late_tuple_stream("late").as_bolt().declare_output_fields(declarer)
    assert list(declarer.streams["late"].fields) == ["late_tuple"]
    assert list(declarer.streams["default"].fields) == ["n"]


def test_empty_config_on_wrapped_bolt_has_only_the_window_keys():
    executor = Recorder().with_window(Count(3)).as_bolt()
    assert executor.get_component_configuration() == {shapes.WINDOW_LENGTH_COUNT: 3}


def test_count_window_acks_on_expiry_and_anchors_to_the_window():
    bolt = Recorder().with_window(Count(3), Count(2))
    executor = bolt.as_bolt()
    collector = Collector()
    with clock.simulation():
        executor.prepare(executor.get_component_configuration(), Context(), collector)
        tuples = [tup([i]) for i in range(6)]
        for t in tuples:
            executor.execute(t)
    assert [[x[0] for x in w.get()] for w in bolt.windows] == [[0, 1], [1, 2, 3], [3, 4, 5]]
    assert collector.acked == tuples[:3]
    # untracked tuples (no tree): nothing to anchor to, on count windows
    assert all(e[2] in ([], w.get()) for e, w in zip(collector.emitted, bolt.windows, strict=True))


def test_count_window_emits_join_the_tree_of_every_window_tuple(window_path):
    """One anchor per tree root, the newest window tuple of that root: the same trees."""
    bolt = Recorder().with_window(Count(3), Count(2))
    executor = bolt.as_bolt()
    collector = Collector()
    with clock.simulation():
        executor.prepare(executor.get_component_configuration(), Context(), collector)
        # tuples 0,1 of tree 100; 2 of trees 100 and 101; 3,4 of 101; 5 of 102
        trees = [{100: 1}, {100: 2}, {100: 3, 101: 4}, {101: 5}, {101: 6}, {102: 7}]
        tuples = [new_tuple([i], Fields("ts"), "s1", "default", 1, ids)
                  for i, ids in enumerate(trees)]
        for t in tuples:
            executor.execute(t)
    assert [[x[0] for x in w.get()] for w in bolt.windows] == [[0, 1], [1, 2, 3], [3, 4, 5]]
    anchors = [e[2] for e in collector.emitted]
    by_id = [sorted(t[0] for t in {id(a): a for a in a_list}.values()) for a_list in anchors]
    # incremental: the newest tuple of each root; the general scan: every tuple
    assert by_id == ([[1], [2, 3], [4, 5]] if window_path else [[0, 1], [1, 2, 3], [3, 4, 5]])
    for a_list, w in zip(anchors, bolt.windows, strict=True):
        assert all(any(a is t for t in w.get()) for a in a_list)
        assert {r for a in a_list for r in a.id.roots()} == {r for t in w.get() for r in t.id.roots()}


def test_explicit_anchors_are_kept():
    class Explicit(Recorder):
        def execute(self, window):
            self.collector.emit([1], anchors=window.get()[0])

    bolt = Explicit().with_tumbling_window(Count(2))
    executor = bolt.as_bolt()
    collector = Collector()
    executor.prepare(executor.get_component_configuration(), Context(), collector)
    a, b = tup([1]), tup([2])
    executor.execute(a)
    executor.execute(b)
    assert collector.emitted == [("default", [1], a)]


def test_processing_time_sliding_window_on_ticks():
    bolt = Recorder().with_window(Duration.seconds(2), Duration.seconds(1))
    executor = bolt.as_bolt()
    conf = executor.get_component_configuration()
    assert conf["topology.tick.tuple.freq.secs"] == 1.0
    collector = Collector()
    with clock.simulation() as sim:
        executor.prepare(conf, Context(), collector)
        a = tup(["a"], fields=("v",))
        executor.execute(a)
        sim.advance(1)
        executor.execute(tick())
        b = tup(["b"], fields=("v",))
        executor.execute(b)
        sim.advance(1)
        executor.execute(tick())
        sim.advance(1)
        executor.execute(tick())
        sim.advance(1)
        executor.execute(tick())
    assert [[t["v"] for t in w.get()] for w in bolt.windows] == [["a"], ["a", "b"], ["b"]]
    assert [[t["v"] for t in w.get_new()] for w in bolt.windows] == [["a"], ["b"], []]
    assert [[t["v"] for t in w.get_expired()] for w in bolt.windows] == [[], [], ["a"]]
    assert collector.acked == [a, b]
    first = bolt.windows[0]
    assert first.end_timestamp - first.start_timestamp == 2000


def test_user_tick_frequency_below_the_window_wins():
    class Ticking(Recorder):
        def get_component_configuration(self):
            return {"topology.tick.tuple.freq.secs": 0.5, "my.key": 1}

    bolt = Ticking().with_window(Duration.seconds(3), Duration.seconds(2))
    conf = bolt.as_bolt().get_component_configuration()
    assert conf["topology.tick.tuple.freq.secs"] == 0.5
    assert conf["my.key"] == 1


def test_session_window_by_key_on_processing_time():
    bolt = Recorder().with_session_window(Duration.seconds(2), key=Fields("user"))
    executor = bolt.as_bolt()
    collector = Collector()
    with clock.simulation() as sim:
        executor.prepare(executor.get_component_configuration(), Context(), collector)
        executor.execute(tup(["u1", 1], fields=("user", "n")))
        executor.execute(tup(["u2", 2], fields=("user", "n")))
        sim.advance(1.5)
        executor.execute(tup(["u1", 3], fields=("user", "n")))
        executor.execute(tick())
        assert bolt.windows == []
        sim.advance(0.5)  # u2 silent for 2 s: its session closes; u1 heard 0.5 s ago
        executor.execute(tick())
        assert [[t["n"] for t in w.get()] for w in bolt.windows] == [[2]]
        sim.advance(2)
        executor.execute(tick())
    assert [[t["n"] for t in w.get()] for w in bolt.windows] == [[2], [1, 3]]
    second = bolt.windows[1]
    assert second.end_timestamp - second.start_timestamp == 3500
    assert len(collector.acked) == 3


def test_session_window_on_event_time_merges_out_of_order_tuples():
    bolt = Recorder().with_session_window(Duration.milliseconds(10)).with_timestamp_field("ts")
    executor = bolt.as_bolt()
    executor.prepare(executor.get_component_configuration(), Context(), Collector())
    for ts in [100, 105, 118, 125, 110]:  # 110 bridges the two sessions
        executor.execute(tup([ts]))
    executor.watermarks.run()  # watermark 125: nothing closes before 135
    assert bolt.windows == []
    executor.execute(tup([200]))
    executor.watermarks.run()
    assert [stamps(w) for w in bolt.windows] == [[100, 105, 110, 118, 125]]


def test_window_length_is_required():
    class Bare(Recorder):
        pass

    with pytest.raises(InvalidTopologyError, match="window length is not specified"):
        Bare().as_bolt().get_component_configuration()


def test_shapes_are_checked():
    with pytest.raises(ValueError):
        Count(0)
    with pytest.raises(ValueError, match="window length must be a Count or a Duration"):
        Recorder().with_window(3)
    assert Duration.minutes(1).value == 60_000 and Duration.hours(1).value == 3_600_000


class NumberSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_builder_wraps_windowed_bolts():
    b = TopologyBuilder()
    b.set_spout("s", NumberSpout())
    b.set_bolt("sum", Recorder().with_window(Count(30), Count(10))).shuffle_grouping("s")
    spec = b.create_topology().components["sum"]
    assert spec.conf[shapes.WINDOW_LENGTH_COUNT] == 30
    assert spec.conf[shapes.SLIDING_INTERVAL_COUNT] == 10
    assert isinstance(WindowedBoltExecutor, type)


def test_submit_refuses_a_window_longer_than_the_message_timeout():
    from squall.runtime.submission import prepare_conf

    b = TopologyBuilder()
    b.set_spout("s", NumberSpout())
    b.set_bolt("w", Recorder().with_window(Duration.seconds(20), Duration.seconds(15))).shuffle_grouping("s")
    topology = b.create_topology()
    with pytest.raises(InvalidTopologyError, match=r"35000 ms .*topology.message.timeout.secs 30 s"):
        prepare_conf({}, topology)
    prepare_conf({"topology.message.timeout.secs": 35}, topology)


def test_submit_refuses_a_count_window_above_max_spout_pending():
    from squall.runtime.submission import prepare_conf

    b = TopologyBuilder()
    b.set_spout("s", NumberSpout())
    b.set_bolt("w", Recorder().with_window(Count(30), Count(10))).shuffle_grouping("s")
    with pytest.raises(InvalidTopologyError, match="40 is more than topology.max.spout.pending 20"):
        prepare_conf({"topology.max.spout.pending": 20}, b.create_topology())
