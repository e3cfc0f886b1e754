"""Storm's StatefulWindowedBoltExecutorTest and PersistentWindowedBoltExecutorTest, ported."""

from __future__ import annotations

import pytest

from squall import Count, Fields, InvalidTopologyError, StatefulWindowedBolt
from squall.state import memory
from squall.windows.persistent import PersistentWindowedBoltExecutor
from squall.windows.stateful_executor import StatefulWindowedBoltExecutor, window_state
from tests.unit.windows.fakes import Collector, Context, tup


class Recorder(StatefulWindowedBolt):
    def __init__(self) -> None:
        super().__init__()
        self.windows: list = []
        self.state = None

    def init_state(self, state):
        self.state = state

    def execute(self, window):
        self.windows.append([t["msgid"] for t in window.get()])


@pytest.fixture(autouse=True)
def fresh_memory():
    memory.clear()
    yield
    memory.clear()


CONTEXT = Context(sources=[("a", "s")], tasks={"a": [1]})


def tuples(ids):
    return [tup([i], fields=("msgid",), component="a", stream="s", task=1) for i in ids]


def prepared(bolt, collector=None):
    executor = bolt.as_bolt()
    conf = executor.get_component_configuration()
    executor.prepare(conf, CONTEXT, collector or Collector())
    return executor, conf


def test_prepare_needs_a_message_id_field():
    with pytest.raises(InvalidTopologyError, match="with_message_id_field"):
        Recorder().with_tumbling_window(Count(5)).as_bolt().get_component_configuration()


def test_prepare_with_msgid():
    executor, _ = prepared(Recorder().with_tumbling_window(Count(5)).with_message_id_field("msgid"))
    assert isinstance(executor, StatefulWindowedBoltExecutor)


def test_execute_records_the_last_evaluated_id():
    bolt = Recorder().with_tumbling_window(Count(5)).with_message_id_field("msgid")
    executor, conf = prepared(bolt)
    executor.init_state(None)
    for t in tuples(range(5)):
        executor.execute(t)
    assert bolt.windows == [[0, 1, 2, 3, 4]]
    assert executor.stream_state.get([1, "a", "s"]) == [-(2**63), 4]


def test_no_window_before_init_state():
    bolt = Recorder().with_tumbling_window(Count(2)).with_message_id_field("msgid")
    executor, _ = prepared(bolt)
    for t in tuples(range(2)):
        executor.add(t)
    assert bolt.windows == []  # the trigger starts with init_state


def test_recovery_skips_expired_and_refills_evaluated():
    bolt = Recorder().with_tumbling_window(Count(5)).with_message_id_field("msgid")
    executor, conf = prepared(bolt)
    saved = window_state(conf, CONTEXT)
    saved.put([1, "a", "s"], [4, 4])
    saved.commit(1)
    collector = Collector()
    executor, _ = prepared(Recorder().with_tumbling_window(Count(5)).with_message_id_field("msgid"),
                           collector)
    executor.init_state(None)
    replayed = tuples(range(10))
    for t in replayed[:5]:
        executor.execute(t)
    assert collector.acked == replayed[:5]  # expired before the failure: acked, skipped
    assert not executor.manager.queue
    for t in replayed[5:]:
        executor.execute(t)
    assert executor.bolt.windows == [[5, 6, 7, 8, 9]]
    assert executor.stream_state.get([1, "a", "s"]) == [4, 9]


def test_recovery_refills_the_window_without_evaluating_it_again():
    bolt = Recorder().with_window(Count(4), Count(2)).with_message_id_field("msgid")
    executor, conf = prepared(bolt)
    saved = window_state(conf, CONTEXT)
    saved.put([1, "a", "s"], [1, 3])  # 0, 1 expired; 2, 3 evaluated
    saved.commit(1)
    executor, _ = prepared(Recorder().with_window(Count(4), Count(2)).with_message_id_field("msgid"))
    executor.init_state(None)
    for t in tuples(range(2, 6)):
        executor.execute(t)
    assert executor.bolt.windows == [[2, 3, 4, 5]]


def test_window_progress_follows_the_checkpoints():
    bolt = Recorder().with_tumbling_window(Count(2)).with_message_id_field("msgid")
    executor, conf = prepared(bolt)
    executor.init_state(None)
    for t in tuples(range(2)):
        executor.execute(t)
    executor.pre_prepare(1)
    executor.pre_commit(1)
    for t in tuples(range(2, 4)):
        executor.execute(t)
    executor.pre_rollback()
    assert window_state(conf, CONTEXT).get([1, "a", "s"]) == [-(2**63), 1]


class Summer(StatefulWindowedBolt):
    def __init__(self) -> None:
        super().__init__()
        self.windows: list = []

    def execute(self, window):
        self.windows.append([t["v"] for t in window.get()])


def values(vs):
    return [tup([v], fields=("v",), component="a", stream="s", task=1) for v in vs]


def test_persistent_window_acks_on_execute_and_survives_a_restart():
    bolt = Summer().with_window(Count(3), Count(1)).with_persistence()
    collector = Collector()
    executor, conf = prepared(bolt, collector)
    assert isinstance(executor, PersistentWindowedBoltExecutor)
    executor.init_state(None)
    ins = values([1, 2, 3, 4])
    for t in ins:
        executor.execute(t)
    assert collector.acked == ins  # the stateful task holds these acks until the commit
    assert collector.emitted == []
    executor.pre_prepare(1)
    executor.pre_commit(1)
    executor.execute(values([5])[0])  # not committed: lost with the task, replayed by the spout
    # a new task instance restores the committed window [2, 3, 4] and its counts
    restarted = Summer().with_window(Count(3), Count(1)).with_persistence()
    executor2, _ = prepared(restarted)
    executor2.init_state(None)
    executor2.execute(values([5])[0])
    assert restarted.windows == [[3, 4, 5]]
    assert bolt.windows == [[1], [1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]


def test_persistent_window_rolls_back_to_the_last_commit():
    bolt = Summer().with_tumbling_window(Count(3)).with_persistence()
    executor, _ = prepared(bolt)
    executor.init_state(None)
    for t in values([1, 2]):
        executor.execute(t)
    executor.pre_prepare(1)
    executor.pre_commit(1)
    executor.execute(values([3])[0])
    assert bolt.windows == [[1, 2, 3]]
    executor.pre_rollback()  # back to the window of the commit: [1, 2], not yet evaluated
    executor.execute(values([30])[0])
    assert bolt.windows == [[1, 2, 3], [1, 2, 30]]


def test_persistent_session_window_survives_a_restart():
    from squall import Duration

    bolt = Summer().with_session_window(Duration.milliseconds(10), key=Fields("v")).with_persistence()
    bolt.with_timestamp_field("ts")
    executor = bolt.as_bolt()
    conf = executor.get_component_configuration()
    executor.prepare(conf, CONTEXT, Collector())
    executor.init_state(None)
    executor.execute(tup([7, 100], fields=("v", "ts"), component="a", stream="s"))
    executor.pre_prepare(1)
    executor.pre_commit(1)
    again = Summer().with_session_window(Duration.milliseconds(10), key=Fields("v")).with_persistence()
    again.with_timestamp_field("ts")
    executor2 = again.as_bolt()
    executor2.prepare(conf, CONTEXT, Collector())
    executor2.init_state(None)
    executor2.execute(tup([7, 105], fields=("v", "ts"), component="a", stream="s"))
    executor2.execute(tup([8, 200], fields=("v", "ts"), component="a", stream="s"))
    executor2.watermarks.run()
    assert again.windows == [[7, 7]]


def event_time_persistent(collector):
    from squall import Duration

    bolt = (Summer().with_window(Duration.milliseconds(20), Duration.milliseconds(10))
            .with_timestamp_field("ts").with_late_tuple_stream("late").with_persistence())
    executor = bolt.as_bolt()
    executor.prepare(executor.get_component_configuration(), CONTEXT, collector)
    return bolt, executor


def ts_tuple(v, ts):
    return tup([v, ts], fields=("v", "ts"), component="a", stream="s", task=1)


def test_persistent_late_tuple_is_acked_once_and_emitted_anchored_to_itself():
    collector = Collector()
    bolt, executor = event_time_persistent(collector)
    executor.init_state(None)
    executor.execute(ts_tuple(1, 100))
    executor.watermarks.run()
    late = ts_tuple(2, 50)
    executor.execute(late)
    assert collector.acked.count(late) == 1
    assert collector.emitted == [("late", [[2, 50]], late)]


def test_persistent_activation_saves_the_window_and_its_policies():
    collector = Collector()
    bolt, executor = event_time_persistent(collector)
    executor.init_state(None)
    ins = [ts_tuple(v, 100 + v) for v in range(5)]
    for t in ins:
        executor.execute(t)
    assert collector.acked == ins  # all acked (held until the commit by the task)
    executor.watermarks.run()  # watermark 104: the window ending at 100 holds 100
    assert bolt.windows == [[0]]
    executor.pre_prepare(1)
    saved = executor.window_state
    assert [e[2] for e in saved.get("events")] == [100, 101, 102, 103, 104]
    assert saved.get("system")["manager"]["ts"] == 110  # the next window end
    assert saved.get("system")["watermark"][0] == 104


def test_persistent_rollback_before_init_state():
    calls = []

    class Hooked(Summer):
        def pre_rollback(self):
            calls.append("rollback")

    bolt = Hooked().with_tumbling_window(Count(2)).with_persistence()
    executor, _ = prepared(bolt)
    executor.pre_rollback()  # before init_state: nothing to restore, the hook still runs
    assert calls == ["rollback"]
    executor.init_state(None)
    for t in values([1, 2]):
        executor.execute(t)
    assert bolt.windows == [[1, 2]]


def test_persistent_window_emits_are_anchored_to_the_window():
    class Emitting(Summer):
        def prepare(self, conf, context, collector):
            self.collector = collector

        def execute(self, window):
            self.collector.emit([len(window.get())])

        def declare_output_fields(self, declarer):
            declarer.declare(Fields("n"))

    collector = Collector()
    executor, _ = prepared(Emitting().with_tumbling_window(Count(2)).with_persistence(), collector)
    executor.init_state(None)
    ins = values([1, 2])
    for t in ins:
        executor.execute(t)
    assert collector.emitted == [("default", [2], ins)]
