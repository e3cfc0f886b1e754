"""Windowed bolts on LocalCluster: count, duration, event-time and session windows,
acking when tuples leave the window, anchoring to the window, late tuples, validation."""

from __future__ import annotations

import pytest

from squall import (
    Config,
    Count,
    Duration,
    Fields,
    InvalidTopologyError,
    LocalCluster,
    TopologyBuilder,
)
from squall.runtime.clock import SIMULATED_EPOCH_MS
from squall.testing import FeederSpout, simulated_time, tracked_topology
from tests.integration.components import RECORD, reset
from tests.integration.window_components import Sink, WindowRecorder


@pytest.fixture(autouse=True)
def clean_record():
    reset()
    yield
    reset()


def topology(feeder, bolt, sink_fail=False, late=None):
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("window", bolt).shuffle_grouping("feed")
    sink = b.set_bolt("sink", Sink(fail=sink_fail)).shuffle_grouping("window")
    if late:
        sink.shuffle_grouping("window", stream=late)
    return b.create_topology()


def windows(tag="window"):
    return [w["values"] for w in RECORD[tag]]


def test_tumbling_count_window_acks_tuples_as_they_leave_it():
    feeder = FeederSpout(Fields("value"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "tumble", Config(),
                                   topology(feeder, WindowRecorder().with_tumbling_window(Count(5))))
        for i in range(1, 21):
            feeder.feed([i], msg_id=i)
        tracked.cluster.wait_quiet(10)
        assert windows() == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15], [16, 17, 18, 19, 20]]
        assert [s[1] for s in RECORD["sink"]] == [[15], [40], [65], [90]]
        # the last window's tuples are still in the window: not acked yet
        assert sorted(feeder.acked) == list(range(1, 16))
        assert feeder.failed == []


def test_sliding_count_window_has_new_and_expired_tuples():
    feeder = FeederSpout(Fields("value"))
    with LocalCluster() as cluster:
        cluster.submit_topology("slide", Config(),
                                topology(feeder, WindowRecorder().with_window(Count(4), Count(2))))
        for i in range(1, 9):
            feeder.feed([i], msg_id=i)
        cluster.wait_quiet(10)
    assert windows() == [[1, 2], [1, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7, 8]]
    assert [w["new"] for w in RECORD["window"]] == [[1, 2], [3, 4], [5, 6], [7, 8]]
    assert [w["expired"] for w in RECORD["window"]] == [[], [], [1, 2], [3, 4]]
    assert sorted(feeder.acked) == [1, 2, 3, 4]


def test_emits_are_anchored_to_the_window_so_a_failure_downstream_fails_them_all():
    feeder = FeederSpout(Fields("value"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "anchor", Config(),
                                   topology(feeder, WindowRecorder().with_tumbling_window(Count(3)),
                                            sink_fail=True))
        for i in range(1, 4):
            feeder.feed([i], msg_id=i)
        tracked.wait_idle(timeout=10)
        assert sorted(feeder.failed) == [1, 2, 3]


def test_sliding_duration_window_on_simulated_time():
    feeder = FeederSpout(Fields("value"))
    bolt = WindowRecorder().with_window(Duration.seconds(2), Duration.seconds(1))
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("dur", Config(), topology(feeder, bolt))
        feeder.feed([1], msg_id=1)
        feeder.feed([2], msg_id=2)
        cluster.wait_quiet(10)
        cluster.advance_time(1)
        feeder.feed([3], msg_id=3)
        cluster.wait_quiet(10)
        cluster.advance_time(1)
        assert feeder.acked == []
        cluster.advance_time(1)  # the window ending at 3 s no longer holds 1 and 2
        assert sorted(feeder.acked) == [1, 2]
        cluster.advance_time(1)
        assert sorted(feeder.acked) == [1, 2, 3]
    assert windows() == [[1, 2], [1, 2, 3], [3]]
    assert [w["expired"] for w in RECORD["window"]] == [[], [], [1, 2]]
    first = RECORD["window"][0]
    assert first["end"] - first["start"] == 2000


def test_tumbling_duration_window_on_simulated_time():
    feeder = FeederSpout(Fields("value"))
    bolt = WindowRecorder().with_tumbling_window(Duration.seconds(2))
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("tdur", Config(), topology(feeder, bolt))
        for values in [[1, 2], [3], [4], [], [5, 6]]:  # one list per second
            for v in values:
                feeder.feed([v], msg_id=v)
            cluster.wait_quiet(10)
            cluster.advance_time(1)
        cluster.advance_time(1)
    # windows (0, 2], (2, 4], (4, 6] s, each evaluated at its end (minus 1 ms)
    assert windows() == [[1, 2, 3], [4], [5, 6]]
    assert [w["expired"] for w in RECORD["window"]] == [[], [1, 2, 3], [4]]
    assert sorted(feeder.acked) == [1, 2, 3, 4]


def test_event_time_count_window_evaluates_at_each_watermark():
    feeder = FeederSpout(Fields("ts"))
    bolt = WindowRecorder(field="ts").with_window(Count(3), Count(2)).with_timestamp_field("ts")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("ecount", Config(), topology(feeder, bolt))
        for i, ts in enumerate([10, 12, 11, 14, 20, 30]):  # out of order: 11 after 12
            feeder.feed([ts], msg_id=i)
        cluster.wait_quiet(10)
        cluster.advance_time(1)  # watermark 30: every 2nd event up to it triggers
    # events ordered as they arrived; a count window holds the last 3 up to its trigger
    assert windows() == [[10, 12], [12, 11, 14], [14, 20, 30]]


def test_event_time_windows_with_watermarks_and_a_late_tuple_stream():
    feeder = FeederSpout(Fields("ts"))
    bolt = (WindowRecorder(field="ts").with_window(Duration.milliseconds(20), Duration.milliseconds(10))
            .with_timestamp_field("ts").with_lag(Duration.milliseconds(5))
            .with_late_tuple_stream("late"))
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("event", Config(), topology(feeder, bolt, late="late"))
        for i, ts in enumerate([603, 605, 607, 618, 626, 636]):
            feeder.feed([ts], msg_id=i)
        cluster.wait_quiet(10)
        assert windows() == []  # no watermark yet: it comes with the interval (1 s)
        cluster.advance_time(1)
        assert windows() == [[603, 605, 607], [603, 605, 607, 618], [618, 626]]
        assert [(w["start"], w["end"]) for w in RECORD["window"]] == [(590, 610), (600, 620), (610, 630)]
        feeder.feed([600], msg_id="late")  # older than the watermark (631)
        cluster.wait_quiet(10)
        assert ("late", [[600]]) in RECORD["sink"]
        assert "late" in feeder.acked
        assert sorted(a for a in feeder.acked if a != "late") == [0, 1, 2]


def test_the_watermark_waits_for_every_input_stream():
    fast, slow = FeederSpout(Fields("ts")), FeederSpout(Fields("ts"))
    bolt = WindowRecorder(field="ts").with_tumbling_window(Duration.milliseconds(10))
    b = TopologyBuilder()
    b.set_spout("fast", fast)
    b.set_spout("slow", slow)
    b.set_bolt("window", bolt.with_timestamp_field("ts")).shuffle_grouping("fast").shuffle_grouping("slow")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("two", Config(), b.create_topology())

        def step(feeder, stamps):
            for ts in stamps:
                feeder.feed([ts])
            cluster.wait_quiet(10)
            cluster.advance_time(1)

        step(fast, [101, 105, 112, 118])
        assert windows() == []  # nothing from "slow" yet: no watermark
        step(slow, [113])  # watermark min(118, 113) = 113: the window ending at 110 only
        assert windows() == [[101, 105]]
        fast.feed([125])
        step(slow, [130])  # watermark min(125, 130) = 125: the window ending at 120
        # in arrival order; 125 is beyond the watermark and the lag (0): it ends the scan
        assert windows() == [[101, 105], [112, 118, 113]]


def test_session_windows_per_key_on_simulated_time():
    feeder = FeederSpout(Fields("user", "value"))
    bolt = WindowRecorder().with_session_window(Duration.seconds(5), key=Fields("user"))
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("sessions", Config(), topology(feeder, bolt))
        feeder.feed(["ann", 1], msg_id=1)
        feeder.feed(["bob", 10], msg_id=2)
        cluster.wait_quiet(10)
        cluster.advance_time(3)
        feeder.feed(["ann", 2], msg_id=3)
        cluster.wait_quiet(10)
        cluster.advance_time(3)  # bob silent for 6 s: closed; ann for 3 s: open
        assert windows() == [[10]]
        assert feeder.acked == [2]
        cluster.advance_time(3)
        assert windows() == [[10], [1, 2]]
        assert sorted(feeder.acked) == [1, 2, 3]
    ann = RECORD["window"][1]
    assert ann["start"] == SIMULATED_EPOCH_MS and ann["end"] == SIMULATED_EPOCH_MS + 3000 + 5000


def test_a_window_longer_than_the_message_timeout_is_refused_at_submit():
    feeder = FeederSpout(Fields("value"))
    bolt = WindowRecorder().with_window(Duration.seconds(25), Duration.seconds(10))
    conf = Config()
    conf.set_message_timeout_secs(30)
    with LocalCluster() as cluster:
        too_long = r"35000 ms is more than topology.message.timeout.secs 30"
        with pytest.raises(InvalidTopologyError, match=too_long):
            cluster.submit_topology("long", conf, topology(feeder, bolt))
        conf.set_message_timeout_secs(40)
        cluster.submit_topology("long", conf, topology(feeder, bolt))


def stateful_topology(feeder, bolt):
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("window", bolt).shuffle_grouping("feed")
    return b.create_topology()


def stateful_conf():
    c = Config()
    c.update({"topology.state.checkpoint.interval.ms": 1000, "topology.message.timeout.secs": 30})
    return c


@pytest.mark.parametrize("persistent", [False, True])
def test_stateful_windowed_bolt_acks_at_checkpoints_and_keeps_its_state(persistent):
    from squall.state import memory
    from tests.integration.window_components import StatefulWindowSum

    memory.clear()
    feeder = FeederSpout(Fields("msgid", "value"))
    bolt = StatefulWindowSum().with_tumbling_window(Count(3))
    bolt = bolt.with_persistence() if persistent else bolt.with_message_id_field("msgid")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("swin", stateful_conf(), stateful_topology(feeder, bolt))
        cluster.advance_time(1)  # INITSTATE
        for i in range(1, 7):
            feeder.feed([i, i * 10], msg_id=i)
        cluster.wait_quiet(10)
        assert RECORD["swindow"] == [[10, 20, 30], [40, 50, 60]]
        assert feeder.acked == []  # acks wait for the checkpoint that covers them
        cluster.advance_time(3)
        # persistent: every tuple is saved in the window, so all are acked; otherwise only
        # those that left the window (the first three)
        assert sorted(feeder.acked) == ([1, 2, 3, 4, 5, 6] if persistent else [1, 2, 3])
    memory.clear()
