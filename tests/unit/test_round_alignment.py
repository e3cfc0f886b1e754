"""Tuples an exactly-once bolt holds for alignment count for the spouts' backpressure
(RELIABILITY E24): they left the bolt's queue but are input not yet handled."""

from __future__ import annotations

from types import SimpleNamespace

from tests.unit.test_round import Bolt, Clock, Exchange, Spout, core


def test_held_tuples_stop_the_spouts_above_the_high_mark_but_frames_are_still_taken():
    clock, ex = Clock(), Exchange()
    join = Bolt(clock, 2, "join")
    join.alignment = SimpleNamespace(held=list(range(900)))  # behind a late barrier
    sink = Bolt(clock, 3, "sink")
    spout = Spout(clock, 1, out=sink)
    r = core(clock, ex, bolts=[join, sink], spouts=[spout])  # capacity 1000, high mark 800
    r.aligners = [join]
    r.run(active=True)
    assert r.throttled and spout.calls == 0
    assert ex.rooms and ex.rooms[-1] == 1000  # the queue alone sets the room for frames
    join.alignment.held.clear()  # the barrier came: the held tuples ran
    r.run(active=True)
    assert not r.throttled and spout.calls > 0
