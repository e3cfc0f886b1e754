"""The incremental count path equals the general scan (hypothesis).

Both managers get the same adds, evaluations, compactions and restores; every window, its
new and expired tuples and every expiry must be the same, in the same order. And the
anchors of a count window's emits join exactly the trees of the window's tuples.
"""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from squall import Count, Fields, WindowedBolt
from squall.api.tuple import new_tuple
from squall.runtime import clock
from squall.windows import manager as manager_module
from squall.windows.events import Event
from squall.windows.eviction import CountEvictionPolicy
from squall.windows.manager import WindowManager
from squall.windows.triggers import CountTriggerPolicy, TimeTriggerPolicy
from tests.unit.windows.fakes import Collector, Context


class Recorder:
    def __init__(self) -> None:
        self.calls: list = []

    def on_expiry(self, events: list) -> None:
        self.calls.append(("expiry", list(events)))

    def on_activation(self, events: list, new: list, expired: list, ts: int | None) -> None:
        self.calls.append(("window", list(events), list(new), list(expired), ts))


def build(incremental: bool, length: int, slide: int | None) -> tuple[WindowManager, Recorder]:
    rec = Recorder()
    wm = WindowManager(rec, incremental=incremental)
    ev = CountEvictionPolicy(length)
    trigger = (CountTriggerPolicy(slide, wm, ev) if slide is not None
               else TimeTriggerPolicy(3_600_000, wm, ev))
    wm.set_policies(ev, trigger)
    trigger.start()
    return wm, rec


ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(1, 30)),   # add that many values
    st.tuples(st.just("trigger"), st.just(0)),        # evaluate now (a time trigger's firing)
    st.tuples(st.just("restore"), st.integers(0, 40)),  # refill the queue as after a recovery
), max_size=40)


@settings(max_examples=300, deadline=None)
@given(length=st.integers(1, 25), slide=st.one_of(st.none(), st.integers(1, 30)),
       threshold=st.integers(1, 12), start_count=st.integers(0, 5), ops=ops)
def test_incremental_count_path_equals_the_scan(length, slide, threshold, start_count, ops):
    with clock.simulation(), mock.patch.object(manager_module, "EXPIRE_EVENTS_THRESHOLD", threshold):
        fast, fast_rec = build(True, length, slide)
        slow, slow_rec = build(False, length, slide)
        assert fast.count_path and not slow.count_path
        value = 0
        for op, n in ops:
            if op == "add":
                for _ in range(n):
                    value += 1
                    fast.add(value)
                    slow.add(value)
            elif op == "trigger":
                fast.on_trigger()
                slow.on_trigger()
            else:  # what the persistent executor does on recovery: a new queue, counts restored
                kept = list(range(value + 1, value + 1 + n))
                value += n
                for wm in (fast, slow):
                    wm.queue.clear()
                    for v in kept:
                        wm.queue.append(Event(v, clock.time_ms()))
                    wm.forget_previous()
                    wm.restore_state({"es": n + start_count, "ts": 0})
            assert fast_rec.calls == slow_rec.calls
            assert [e.value for e in fast.queue] == [e.value for e in slow.queue]
            assert fast.eviction.get_state() == slow.eviction.get_state()
        assert fast_rec.calls == slow_rec.calls


class Emitter(WindowedBolt):
    def __init__(self) -> None:
        super().__init__()
        self.windows: list = []

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, window):
        self.windows.append(list(window.get()))
        self.collector.emit([len(window.get())])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


@settings(max_examples=300, deadline=None)
@given(length=st.integers(1, 20), slide=st.integers(1, 25),
       trees=st.lists(st.frozensets(st.integers(1, 4), max_size=3), max_size=60))
def test_count_window_anchors_join_exactly_the_trees_of_the_window(length, slide, trees):
    """Each emit's anchors are window tuples whose roots are all the window's roots."""
    bolt = Emitter().with_window(Count(length), Count(slide))
    executor = bolt.as_bolt()
    collector = Collector()
    with clock.simulation():
        executor.prepare(executor.get_component_configuration(), Context(), collector)
        for i, roots in enumerate(trees):
            ids = {r: i * 16 + r for r in roots}
            executor.execute(new_tuple([i], Fields("ts"), "s1", "default", 1, ids or None))
    assert len(collector.emitted) == len(bolt.windows)
    for (_, _, anchors), window in zip(collector.emitted, bolt.windows, strict=True):
        assert all(any(a is t for t in window) for a in anchors)
        assert {r for a in anchors for r in a.id.roots()} == {r for t in window for r in t.id.roots()}
