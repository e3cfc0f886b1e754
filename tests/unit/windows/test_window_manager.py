"""Storm's WindowManagerTest, ported: the window manager with each pair of policies."""

from __future__ import annotations

import pytest

from squall.runtime import clock
from squall.windows.events import EvictionContext, WaterMarkEvent
from squall.windows.eviction import (
    CountEvictionPolicy,
    TimeEvictionPolicy,
    WatermarkCountEvictionPolicy,
    WatermarkTimeEvictionPolicy,
)
from squall.windows.manager import EXPIRE_EVENTS_THRESHOLD, WindowManager
from squall.windows.triggers import (
    CountTriggerPolicy,
    TimeTriggerPolicy,
    WatermarkCountTriggerPolicy,
    WatermarkTimeTriggerPolicy,
)


def seq(start: int, stop: int | None = None) -> list[int]:
    return list(range(start, (start if stop is None else stop) + 1))


class Listener:
    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.on_expiry_events: list = []
        self.on_activation_events: list = []
        self.on_activation_new: list = []
        self.on_activation_expired: list = []
        self.all_expiry: list = []
        self.all_activation: list = []
        self.all_new: list = []
        self.all_expired: list = []

    def on_expiry(self, events: list) -> None:
        self.on_expiry_events = events
        self.all_expiry.append(events)

    def on_activation(self, events: list, new: list, expired: list, ts: int | None) -> None:
        self.on_activation_events = events
        self.on_activation_new = new
        self.on_activation_expired = expired
        self.all_activation.append(events)
        self.all_new.append(new)
        self.all_expired.append(expired)


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


@pytest.fixture
def listener() -> Listener:
    return Listener()


@pytest.fixture
def wm(listener: Listener) -> WindowManager:
    return WindowManager(listener)


def setup(wm: WindowManager, eviction, trigger) -> None:
    wm.set_policies(eviction, trigger)
    trigger.start()


def test_count_based_window(wm, listener, sim):
    ev = CountEvictionPolicy(5)
    setup(wm, ev, CountTriggerPolicy(2, wm, ev))
    wm.add(1)
    wm.add(2)
    assert listener.on_expiry_events == []
    assert listener.on_activation_events == seq(1, 2)
    assert listener.on_activation_new == seq(1, 2)
    assert listener.on_activation_expired == []
    wm.add(3)
    wm.add(4)
    assert listener.on_expiry_events == []
    assert listener.on_activation_events == seq(1, 4)
    assert listener.on_activation_new == seq(3, 4)
    wm.add(5)
    wm.add(6)
    assert listener.on_expiry_events == seq(1)
    assert listener.on_activation_events == seq(2, 6)
    assert listener.on_activation_new == seq(5, 6)
    assert listener.on_activation_expired == seq(1)
    listener.clear()
    wm.add(7)
    assert listener.on_expiry_events == []
    wm.add(8)
    assert listener.on_expiry_events == seq(2, 3)
    assert listener.on_activation_events == seq(4, 8)
    assert listener.on_activation_new == seq(7, 8)
    assert listener.on_activation_expired == seq(2, 3)


def test_expire_threshold(wm, listener, sim):
    ev = CountEvictionPolicy(5)
    setup(wm, ev, TimeTriggerPolicy(3_600_000, wm))
    for i in seq(1, 5):
        wm.add(i)
    assert listener.on_expiry_events == []
    for i in seq(6, EXPIRE_EVENTS_THRESHOLD):
        wm.add(i)
    # the window is compacted: old events expire without any trigger
    assert listener.on_expiry_events == seq(1, EXPIRE_EVENTS_THRESHOLD - 5)


@pytest.mark.parametrize("make", [WatermarkCountEvictionPolicy, WatermarkTimeEvictionPolicy])
def test_no_eviction_before_first_watermark(wm, listener, make):
    length = EXPIRE_EVENTS_THRESHOLD
    threshold = EXPIRE_EVENTS_THRESHOLD
    ev = make(length)
    setup(wm, ev, WatermarkCountTriggerPolicy(length, wm, ev))
    for i in seq(1, threshold):
        wm.add(i, i)
    assert listener.all_expiry == []
    wm.add_event(WaterMarkEvent(threshold))
    assert listener.on_activation_events == seq(1, threshold)
    for i in seq(threshold + 1, threshold * 2):
        wm.add(i, i)
    wm.add_event(WaterMarkEvent(threshold + length + 1))
    assert listener.on_expiry_events == seq(1, threshold)


def test_time_based_window(wm, listener, sim):
    ev = TimeEvictionPolicy(1000)
    setup(wm, ev, TimeTriggerPolicy(86_400_000, wm, ev))
    now = clock.time_ms()
    for i in seq(1, 50):
        wm.add(i, now - 1000)
    for i in seq(51, EXPIRE_EVENTS_THRESHOLD):
        wm.add(i, now)
    assert len(listener.on_expiry_events) == 50  # compacted at the threshold
    for i in seq(EXPIRE_EVENTS_THRESHOLD + 1, EXPIRE_EVENTS_THRESHOLD + 100):
        wm.add(i, now - 1000)
    ev.set_context(EvictionContext(now + 100))
    wm.on_trigger()
    assert listener.on_expiry_events == seq(EXPIRE_EVENTS_THRESHOLD + 1, EXPIRE_EVENTS_THRESHOLD + 100)
    assert listener.on_activation_events == seq(51, EXPIRE_EVENTS_THRESHOLD)
    assert listener.on_activation_new == seq(51, EXPIRE_EVENTS_THRESHOLD)
    # the expired list holds those expired by compaction too
    assert listener.on_activation_expired == seq(1, 50) + seq(EXPIRE_EVENTS_THRESHOLD + 1,
                                                               EXPIRE_EVENTS_THRESHOLD + 100)
    listener.clear()
    new = seq(EXPIRE_EVENTS_THRESHOLD + 101, EXPIRE_EVENTS_THRESHOLD + 200)
    for i in new:
        wm.add(i, now)
    ev.set_context(EvictionContext(now + 200))
    wm.on_trigger()
    assert listener.on_expiry_events == []
    assert listener.on_activation_events == seq(51, EXPIRE_EVENTS_THRESHOLD) + new
    assert listener.on_activation_new == new


def test_time_based_window_expiry(wm, listener, sim):
    ev = TimeEvictionPolicy(100)
    setup(wm, ev, TimeTriggerPolicy(86_400_000, wm))
    now = clock.time_ms()
    for i in seq(1, 10):
        wm.add(i)
    ev.set_context(EvictionContext(now + 60))
    wm.on_trigger()
    assert listener.on_activation_events == seq(1, 10)
    assert listener.on_activation_expired == []
    listener.clear()
    ev.set_context(EvictionContext(now + 120))
    wm.on_trigger()
    assert listener.on_expiry_events == seq(1, 10)
    assert listener.on_activation_events == []
    listener.clear()
    ev.set_context(EvictionContext(now + 180))
    wm.on_trigger()
    assert listener.on_activation_expired == []
    assert listener.on_activation_events == []


def test_tumbling_window(wm, listener, sim):
    ev = CountEvictionPolicy(3)
    setup(wm, ev, CountTriggerPolicy(3, wm, ev))
    wm.add(1)
    wm.add(2)
    assert listener.on_expiry_events == []
    wm.add(3)
    assert listener.on_expiry_events == []
    assert listener.on_activation_events == seq(1, 3)
    assert listener.on_activation_expired == []
    assert listener.on_activation_new == seq(1, 3)
    listener.clear()
    wm.add(4)
    wm.add(5)
    wm.add(6)
    assert listener.on_expiry_events == seq(1, 3)
    assert listener.on_activation_events == seq(4, 6)
    assert listener.on_activation_expired == seq(1, 3)
    assert listener.on_activation_new == seq(4, 6)


def test_event_time_based_window(wm, listener):
    ev = WatermarkTimeEvictionPolicy(20)
    setup(wm, ev, WatermarkTimeTriggerPolicy(10, wm, ev))
    wm.add(1, 603)
    wm.add(2, 605)
    wm.add(3, 607)
    wm.add_event(WaterMarkEvent(609))  # finds the next aligned window end, activates nothing
    assert listener.all_activation == []
    wm.add(4, 618)
    wm.add(5, 626)
    wm.add(6, 636)
    wm.add_event(WaterMarkEvent(631))
    assert listener.all_activation == [seq(1, 3), seq(1, 4), seq(4, 5)]
    assert listener.all_expired == [[], [], seq(1, 3)]
    assert listener.all_new == [seq(1, 3), seq(4), seq(5)]
    assert listener.all_expiry[0] == seq(1, 3)
    wm.add(7, 825)
    wm.add(8, 826)
    wm.add(9, 827)
    wm.add(10, 839)
    listener.clear()
    wm.add_event(WaterMarkEvent(834))
    assert listener.all_activation == [seq(5, 6), seq(6), seq(7, 9)]
    assert listener.all_expired == [seq(4), seq(5), []]
    assert listener.all_new == [seq(6), [], seq(7, 9)]
    assert listener.all_expiry == [seq(4), seq(5), seq(6)]


def test_count_based_window_with_event_ts(wm, listener):
    ev = WatermarkCountEvictionPolicy(3)
    setup(wm, ev, WatermarkTimeTriggerPolicy(10, wm, ev))
    for v, ts in [(1, 603), (2, 605), (3, 607), (4, 618), (5, 626), (6, 636)]:
        wm.add(v, ts)
    wm.add_event(WaterMarkEvent(631))
    assert listener.all_activation == [seq(1, 3), seq(2, 4), seq(3, 5)]
    for v, ts in [(7, 665), (8, 666), (9, 667), (10, 679)]:
        wm.add(v, ts)
    listener.clear()
    wm.add_event(WaterMarkEvent(674))
    assert listener.all_activation == [seq(4, 6), seq(4, 6), seq(4, 6), seq(7, 9)]


def test_count_based_trigger_with_event_ts(wm, listener):
    ev = WatermarkTimeEvictionPolicy(20)
    setup(wm, ev, WatermarkCountTriggerPolicy(3, wm, ev))
    for v, ts in [(1, 603), (2, 605), (3, 607), (4, 618), (5, 625), (6, 626), (7, 629), (8, 636)]:
        wm.add(v, ts)
    wm.add_event(WaterMarkEvent(631))
    assert listener.all_activation == [seq(1, 3), seq(3, 6)]
    for v, ts in [(9, 665), (10, 666), (11, 667), (12, 669), (12, 679)]:
        wm.add(v, ts)
    listener.clear()
    wm.add_event(WaterMarkEvent(674))
    assert listener.all_activation == [seq(9), seq(9, 12)]


SAME_TS = [(1, 10), (2, 10), (3, 11), (4, 12), (5, 12), (6, 12), (7, 12), (8, 13), (9, 14), (10, 15)]


def test_count_based_tumbling_with_same_event_ts(wm, listener):
    ev = WatermarkCountEvictionPolicy(2)
    setup(wm, ev, WatermarkCountTriggerPolicy(2, wm, ev))
    for v, ts in SAME_TS:
        wm.add(v, ts)
    wm.add_event(WaterMarkEvent(20))
    assert listener.all_activation == [seq(1, 2), seq(3, 4), seq(5, 6), seq(7, 8), seq(9, 10)]


def test_count_based_sliding_with_same_event_ts(wm, listener):
    ev = WatermarkCountEvictionPolicy(5)
    setup(wm, ev, WatermarkCountTriggerPolicy(2, wm, ev))
    for v, ts in SAME_TS:
        wm.add(v, ts)
    wm.add_event(WaterMarkEvent(20))
    assert listener.all_activation == [seq(1, 2), seq(1, 4), seq(2, 6), seq(4, 8), seq(6, 10)]


def test_event_time_lag(wm, listener):
    ev = WatermarkTimeEvictionPolicy(20, 5)
    setup(wm, ev, WatermarkTimeTriggerPolicy(10, wm, ev))
    for v, ts in [(1, 603), (2, 605), (3, 607), (4, 618), (5, 626), (6, 632), (7, 629), (8, 636)]:
        wm.add(v, ts)
    wm.add_event(WaterMarkEvent(631))
    # out of order events are processed up to the lag
    assert listener.all_activation == [seq(1, 3), seq(1, 4), [4, 5, 7]]


def test_scan_stop(wm, listener):
    scanned: set = set()

    class Recording(WatermarkTimeEvictionPolicy):
        def evict(self, event):
            scanned.add(event.value)
            return super().evict(event)

    ev = Recording(20, 5)
    setup(wm, ev, WatermarkTimeTriggerPolicy(10, wm, ev))
    for v, ts in [(1, 603), (2, 605), (3, 607), (4, 618), (5, 626), (6, 629), (7, 636),
                  (8, 637), (9, 638), (10, 639)]:
        wm.add(v, ts)
    wm.add_event(WaterMarkEvent(631))
    assert listener.all_activation == [seq(1, 3), seq(1, 4), [4, 5, 6]]
    # 8, 9, 10 lie beyond the lag: the scan stops at 7 and never looks at them
    assert scanned == set(seq(1, 7))


def test_time_trigger_fires_on_ticks_and_catches_up(wm, listener, sim):
    ev = TimeEvictionPolicy(2000)
    trigger = TimeTriggerPolicy(1000, wm, ev)
    setup(wm, ev, trigger)
    start = clock.time_ms()
    wm.add("a")
    sim.advance(0.5)
    trigger.on_tick(clock.time_ms())
    assert listener.all_activation == []  # not due yet
    sim.advance(0.5)
    trigger.on_tick(clock.time_ms())
    assert listener.all_activation == [["a"]]
    wm.add("b")
    sim.advance(3)  # three periods in one step: each is evaluated, in order
    trigger.on_tick(clock.time_ms())
    assert listener.all_activation == [["a"], ["a", "b"], ["b"]]
    assert trigger.next_due == start + 5000


def test_time_trigger_tolerates_a_tick_a_millisecond_early(wm, listener, sim):
    ev = TimeEvictionPolicy(1000)
    trigger = TimeTriggerPolicy(1000, wm, ev)
    setup(wm, ev, trigger)
    wm.add("a")
    trigger.on_tick(clock.time_ms() + 999)
    assert listener.all_activation == [["a"]]


def test_a_listener_that_raises_does_not_leave_the_trigger_counting(wm, sim):
    class Raising(Listener):
        def on_activation(self, events, new, expired, ts):
            super().on_activation(events, new, expired, ts)
            raise RuntimeError("bolt failed")

    listener = Raising()
    wm.listener = listener
    ev = CountEvictionPolicy(4)
    setup(wm, ev, CountTriggerPolicy(2, wm, ev))
    wm.add(1)
    with pytest.raises(RuntimeError):
        wm.add(2)
    wm.add(3)  # one tuple since the failed evaluation: no window yet
    assert listener.all_activation == [[1, 2]]


def test_time_trigger_restarts_its_periods_when_the_wall_clock_steps_back(wm, listener, sim):
    ev = TimeEvictionPolicy(1000)
    trigger = TimeTriggerPolicy(1000, wm, ev)
    setup(wm, ev, trigger)
    start = clock.time_ms()
    wm.add("a")
    trigger.on_tick(start - 3_600_000)  # an hour back: no window, periods start again
    assert listener.all_activation == []
    assert trigger.next_due == start - 3_600_000 + 1000
    wm.add("b", start - 3_600_000 + 500)
    trigger.on_tick(start - 3_600_000 + 1000)
    assert listener.all_activation == [["b"]]  # "a" lies in the future of that window
