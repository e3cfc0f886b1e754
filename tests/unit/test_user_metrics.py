"""User metrics: the metric types (squall/api/metrics.py), figures (squall/runtime/user_metrics.py)."""

from __future__ import annotations

import pytest

from squall.api.metrics import RESERVOIR_SIZE, Counter, Histogram, Meter, MetricRegistry
from squall.runtime import clock
from squall.runtime.metrics import TaskMetrics, aggregate
from squall.runtime.user_metrics import (
    ReceivedMetrics,
    component_metrics,
    task_metrics,
    weighted_percentile,
)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_counter_counts_up_and_down():
    c = Counter()
    c.inc()
    c.inc(5)
    c.dec(2)
    assert c.get_count() == 4
    assert task_metrics({"c": c.raw(0.0)}) == {"c": {"type": "counter", "count": 4}}


def test_histogram_figures_cover_the_current_and_previous_window():
    h = Histogram()
    for v in (5, 1, 3):
        h.update(v)
    figures = task_metrics({"h": h.raw(0.0)})["h"]
    assert figures == {"type": "histogram", "count": 3, "min": 1.0, "max": 5.0, "mean": 3.0,
                       "p50": 3.0, "p95": 5.0, "p99": 5.0}
    h.roll(10.0)
    h.update(7)
    figures = task_metrics({"h": h.raw(0.0)})["h"]
    assert (figures["count"], figures["min"], figures["max"], figures["mean"]) == (4, 1.0, 7.0, 4.0)
    h.roll(20.0)  # the first window falls out; the count stays a total
    figures = task_metrics({"h": h.raw(0.0)})["h"]
    assert (figures["count"], figures["min"], figures["max"], figures["mean"]) == (4, 7.0, 7.0, 7.0)
    h.roll(30.0)
    h.roll(40.0)
    figures = task_metrics({"h": h.raw(0.0)})["h"]
    assert figures == {"type": "histogram", "count": 4, "min": None, "max": None, "mean": None,
                       "p50": None, "p95": None, "p99": None}


def test_histogram_keeps_a_bounded_sample_with_exact_count_min_max_mean():
    h = Histogram()
    n = 20 * RESERVOIR_SIZE
    for v in range(n):
        h.update(v)
    raw = h.raw(0.0)
    assert len(raw["windows"][1]["samples"]) == RESERVOIR_SIZE
    f = task_metrics({"h": raw})["h"]
    assert (f["count"], f["min"], f["max"], f["mean"]) == (n, 0.0, n - 1.0, (n - 1) / 2)
    # the sample is uniform: its median is near the true median
    assert abs(f["p50"] - n / 2) < n * 0.1
    assert f["p99"] > n * 0.9


def test_weighted_percentile_is_nearest_rank():
    assert weighted_percentile([], 0.5) is None
    assert weighted_percentile([(float(v), 1.0) for v in range(1, 101)], 0.5) == 50.0
    assert weighted_percentile([(float(v), 1.0) for v in range(1, 101)], 0.99) == 99.0
    # a value standing for 9 values outweighs one standing for 1
    assert weighted_percentile([(1.0, 1.0), (2.0, 9.0)], 0.5) == 2.0


def test_component_percentiles_weigh_each_tasks_sample_by_its_count():
    busy, quiet = Histogram(), Histogram()
    for _ in range(10 * RESERVOIR_SIZE):
        busy.update(100.0)
    for _ in range(RESERVOIR_SIZE):
        quiet.update(1.0)
    f = component_metrics({1: {"h": busy.raw(0.0)}, 2: {"h": quiet.raw(0.0)}})["h"]
    # equal samples, but 10 of 11 values were 100: the median is 100, not 1 or a mix
    assert (f["count"], f["p50"], f["min"], f["max"]) == (11 * RESERVOIR_SIZE, 100.0, 1.0, 100.0)
    assert f["mean"] == pytest.approx((10 * 100.0 + 1.0) / 11)


def test_meter_rate_over_recent_windows_and_mean_rate_since_start():
    clk = Clock()
    m = Meter(clk)
    m.mark(10)
    clk.now += 10
    m.roll(clk.now)
    m.mark(20)
    clk.now += 5
    f = task_metrics({"m": m.raw(clk.now)})["m"]
    assert f == {"type": "meter", "count": 30, "rate": 2.0, "mean_rate": 2.0}
    clk.now += 5
    m.roll(clk.now)  # the window of 10 marks is forgotten by the rate, not by the count
    clk.now += 10
    f = task_metrics({"m": m.raw(clk.now)})["m"]
    assert f == {"type": "meter", "count": 30, "rate": 1.0, "mean_rate": 1.0}


def test_timer_times_a_block_on_the_runtimes_clock():
    with clock.simulation() as sim:
        registry = MetricRegistry("c", 1, clock.current())
        t = registry.timer("lookups")
        with t.time():
            sim.advance(0.25)
        with pytest.raises(KeyError), t.time():  # an exception is timed too, and not swallowed
            sim.advance(0.75)
            raise KeyError("x")
        t.update(500.0)
        ctx = t.time()  # Storm's shape: Timer.Context, stopped by hand (once)
        sim.advance(0.5)
        assert ctx.stop() == 500.0
        sim.advance(0.5)
        ctx.stop()
        f = task_metrics(registry.raw())["lookups"]
    assert t.get_count() == 4
    assert f == {"type": "timer", "count": 4, "min_ms": 250.0, "max_ms": 750.0, "mean_ms": 500.0,
                 "p50_ms": 500.0, "p95_ms": 750.0, "p99_ms": 750.0, "rate": 2.0, "mean_rate": 2.0}


def test_registry_refuses_a_name_twice_and_bad_gauges():
    r = MetricRegistry("split", 7)
    r.counter("n")
    with pytest.raises(ValueError, match=r"component 'split' task 7: a metric named 'n' is already "
                                         r"registered \(counter\)"):
        r.histogram("n")
    with pytest.raises(ValueError, match=r"non-empty string"):
        r.meter("")
    with pytest.raises(TypeError, match=r"a gauge needs a function"):
        r.gauge("g", 3)
    assert set(r.raw()) == {"n"}


def test_gauges_are_read_when_the_figures_are_read_and_errors_shown():
    state = {"q": 3}
    r1, r2 = MetricRegistry("c", 1), MetricRegistry("c", 2)
    r1.gauge("depth", lambda: state["q"])
    r2.gauge("depth", lambda: state["missing"])
    r1.gauge("obj", lambda: object)
    r1.gauge("storm_style", type("G", (), {"get_value": lambda self: 9})())
    state["q"] = 5
    raws = {1: r1.raw(), 2: r2.raw()}
    assert task_metrics(raws[1])["depth"] == {"type": "gauge", "value": 5}
    assert task_metrics(raws[2])["depth"] == {"type": "gauge", "value": None, "error": "KeyError: 'missing'"}
    assert task_metrics(raws[1])["obj"]["value"] == repr(object)
    assert task_metrics(raws[1])["storm_style"]["value"] == 9
    f = component_metrics(raws)["depth"]
    assert f == {"type": "gauge", "values": {1: 5, 2: None}, "sum": 5, "min": 5, "max": 5, "mean": 5.0,
                 "errors": {2: "KeyError: 'missing'"}}


def test_a_name_of_different_kinds_in_two_tasks_is_shown_as_mixed():
    r1, r2 = MetricRegistry("c", 1), MetricRegistry("c", 2)
    r1.counter("x")
    r2.meter("x")
    assert component_metrics({1: r1.raw(), 2: r2.raw()})["x"] == {
        "type": "mixed", "types": {1: "counter", 2: "meter"}}


def test_task_metrics_carry_user_metrics_into_the_component_figures_and_roll_them():
    clk = Clock()
    live = MetricRegistry("split", 3, clk)
    live.counter("words").inc(4)
    live.histogram("len").update(2.0)
    m1, m2 = TaskMetrics("split", 3), TaskMetrics("split", 4)
    m1.user = live
    m2.user = ReceivedMetrics({"words": {"type": "counter", "count": 6}})  # as a heartbeat brings it
    figures = aggregate([m1, m2])
    assert figures["metrics"]["words"] == {"type": "counter", "count": 10}
    assert figures["by_task"][3]["metrics"]["words"]["count"] == 4
    assert figures["by_task"][4]["metrics"] == {"words": {"type": "counter", "count": 6}}
    m1.roll_window(10.0)
    m1.roll_window(10.0)
    assert aggregate([m1])["metrics"]["len"]["max"] is None  # two windows later the value is gone
    assert aggregate([TaskMetrics("x", 1)])["metrics"] == {}
