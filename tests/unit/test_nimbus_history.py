"""MetricHistory: Storm's four windows over bucketed deltas, resets, bounds and persistence."""

from __future__ import annotations

import json

import pytest

from squall.nimbus.history import RINGS, MetricHistory, ring_for

T0 = 1_700_000_000.0  # a bucket boundary of every ring (divisible by 21600)


def raw(emitted=0, acked=0, executed=0, failed=0, transferred=None, execute_ms=0.0, complete_ms=0.0,
        capacity=0.0):
    return {"emitted": emitted, "transferred": emitted if transferred is None else transferred,
            "acked": acked, "failed": failed, "executed": executed, "execute_latency_ms": execute_ms,
            "process_latency_ms": execute_ms, "complete_latency_ms": complete_ms, "capacity": capacity}


def feed(h: MetricHistory, start: float, secs: int, step: int, rate: int, comp: str = "c") -> float:
    """A component emitting ``rate`` tuples a second, sampled every ``step`` seconds."""
    t = start
    total = (h.last.get(comp) or {}).get("emitted") or 0
    while t < start + secs:
        t += step
        total += rate * step
        h.record(t, {comp: raw(emitted=total, acked=total, executed=total)})
    return t


def test_windows_count_only_their_span():
    h = MetricHistory()
    h.record(T0, {"c": raw()})
    now = feed(h, T0, 3600, 10, 2)  # one hour at 2 tuples/s
    assert h.window("c", None, now)["emitted"] == 7200
    ten = h.window("c", 600, now)["emitted"]
    assert 1200 <= ten <= 1200 + 20  # ten minutes, give or take the bucket at the edge
    assert h.window("c", 10800, now)["emitted"] == 7200
    assert h.window("c", 86400, now)["emitted"] == 7200


def test_latency_is_weighted_by_the_tuples_it_covers():
    h = MetricHistory()
    h.record(T0, {"c": raw()})
    h.record(T0 + 10, {"c": raw(executed=100, execute_ms=1.0)})  # 100 tuples at 1 ms
    h.record(T0 + 20, {"c": raw(executed=400, execute_ms=2.5)})  # 300 more at 3 ms: 2.5 overall
    f = h.window("c", 600, T0 + 20)
    assert f["executed"] == 400
    assert f["execute_latency_ms"] == pytest.approx(2.5)
    assert h.series(600, T0 + 20)["points"][-1]["components"]["c"]["execute_latency_ms"] == pytest.approx(3.0)


def test_a_counter_that_goes_down_was_reset():
    h = MetricHistory()
    h.record(T0, {"c": raw(emitted=100)})
    h.record(T0 + 10, {"c": raw(emitted=150)})
    h.record(T0 + 20, {"c": raw(emitted=30)})  # the master was relaunched: counting from zero
    assert h.window("c", None, T0 + 20)["emitted"] == 100 + 50 + 30


def test_rings_stay_bounded():
    h = MetricHistory()
    now = feed(h, T0, 3 * 86400, 600, 1)  # three days, a sample every 10 minutes
    for res, n in RINGS:
        assert len(h.rings[res]) <= n, res
    assert h.window("c", None, now)["emitted"] == 3 * 86400
    assert h.window("c", 86400, now)["emitted"] <= 86400 + 600


def test_series_has_one_point_per_bucket():
    h = MetricHistory()
    h.record(T0, {"a": raw(), "b": raw()})
    for i in range(1, 31):
        h.record(T0 + i * 10, {"a": raw(emitted=i * 10), "b": raw(emitted=i * 20)})
    s = h.series(600, T0 + 300)
    assert s["resolution"] == 10
    assert [p["time"] for p in s["points"]] == [T0 + i * 10 for i in range(31)]
    assert all(p["components"]["a"]["emitted"] == 10 for p in s["points"][1:])
    only = h.series(600, T0 + 300, ["b"])
    assert all(set(p["components"]) == {"b"} for p in only["points"])
    assert ring_for(600) == (10, 60) and ring_for(10800) == (60, 180) and ring_for(86400) == (600, 144)


def test_json_round_trip_keeps_everything():
    h = MetricHistory()
    h.record(T0, {"c": raw()})
    now = feed(h, T0, 1200, 10, 3)
    copy = MetricHistory.from_json(json.loads(json.dumps(h.to_json())))
    for window in (None, 600, 10800):
        assert copy.window("c", window, now) == pytest.approx(h.window("c", window, now))
    assert copy.series(600, now) == h.series(600, now)
    # and it carries on where it was: the next delta is against the saved last sample
    later = feed(copy, now, 10, 10, 3)
    assert copy.window("c", None, later)["emitted"] == h.window("c", None, now)["emitted"] + 30


def test_unknown_layout_starts_afresh():
    assert MetricHistory.from_json({"slots": ["x"]}).components() == []
    assert MetricHistory.from_json(None).components() == []


def test_a_sample_from_the_past_is_ignored():
    h = MetricHistory()
    h.record(T0 + 100, {"c": raw(emitted=10)})
    h.record(T0 + 50, {"c": raw(emitted=5)})
    assert h.window("c", None, T0 + 100)["emitted"] == 10


def test_a_window_ends_at_the_time_asked_not_at_the_last_sample():
    h = MetricHistory()
    h.record(T0, {"c": raw()})
    last = feed(h, T0, 300, 10, 1)  # five minutes of samples, then none (the master was down)
    assert h.window("c", 600, last)["emitted"] == 300
    assert 200 <= h.window("c", 600, last + 400)["emitted"] <= 210  # the first 100 s left (a bucket)
    assert h.window("c", 600, last + 1000)["emitted"] == 0
    assert h.window("c", None, last + 1000)["emitted"] == 300
    assert h.series(600, last + 1000)["points"] == []
