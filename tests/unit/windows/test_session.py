"""JStorm's session windows: the pure session manager."""

from __future__ import annotations

from squall.windows.events import WaterMarkEvent
from squall.windows.session import SessionWindowManager


def manager(gap=10):
    closed = []
    def listener(key, values, start, end):
        closed.append((key, values, start, end))

    return closed, SessionWindowManager(gap, listener)


def test_a_session_closes_after_the_gap_and_not_before():
    closed, m = manager()
    m.add("k", "a", 100)
    m.add("k", "b", 105)
    assert m.close_until(114) == 0
    assert m.close_until(115) == 1
    assert closed == [("k", ["a", "b"], 100, 115)]
    assert m.sessions == {}


def test_keys_have_sessions_of_their_own_closed_oldest_first():
    closed, m = manager()
    m.add("late", "x", 50)
    m.add("early", "y", 40)
    m.add("late", "z", 58)
    m.close_until(100)
    assert closed == [("early", ["y"], 40, 50), ("late", ["x", "z"], 50, 68)]


def test_a_gap_splits_a_key_into_two_sessions():
    closed, m = manager()
    for v, ts in [("a", 0), ("b", 9), ("c", 18), ("d", 30)]:  # 30 - 18 >= the gap
        m.add(None, v, ts)
    m.close_until(100)
    assert [(vs, s, e) for _, vs, s, e in closed] == [(["a", "b", "c"], 0, 28), (["d"], 30, 40)]


def test_an_out_of_order_event_merges_the_sessions_it_bridges_and_sorts_them():
    closed, m = manager()
    m.add(None, "a", 0)
    m.add(None, "c", 16)
    assert len(m.sessions[None]) == 2
    m.add(None, "b", 8)  # within the gap of both
    assert len(m.sessions[None]) == 1
    m.close_until(100)
    assert closed == [(None, ["a", "b", "c"], 0, 26)]


def test_watermarks_close_sessions_and_other_events_do_not():
    closed, m = manager()
    m.add("k", "a", 0)
    m.add_event(WaterMarkEvent(9))
    assert closed == []
    m.add_event(WaterMarkEvent(10))
    assert closed == [("k", ["a"], 0, 10)]
    assert m.pending() == []
