"""The tasks' latency histograms (issue 31, item 3): buckets, batches, and restarts."""

from __future__ import annotations

from squall.runtime.metrics import LATENCY_BUCKETS_MS, TaskMetrics, aggregate
from squall.spark.coordination import add_counters, metrics_from_dict, metrics_to_dict


def test_a_latency_on_a_bound_counts_in_that_bucket_as_prometheus_le_says():
    m = TaskMetrics("s", 1)
    for ms in (0.1, 0.1000001, 10_000.0, 10_000.5):
        m.record_complete(ms)
    assert m.complete_hist[0] == 1 and m.complete_hist[1] == 1  # le=0.1 holds 0.1 itself
    assert m.complete_hist[len(LATENCY_BUCKETS_MS) - 1] == 1 and m.complete_hist[-1] == 1  # 10 s, +Inf
    assert (m.complete_samples, m.acked) == (4, 0)  # record_complete counts latencies, not acks


def test_a_timed_batch_counts_each_tuple_at_its_share():
    m = TaskMetrics("b", 2)
    m.record_execute(30.0, 3)  # three tuples, 10 ms each
    assert m.exec_hist[LATENCY_BUCKETS_MS.index(10.0)] == 3
    assert (m.exec_samples, m.exec_sampled_ms) == (3, 30.0)
    m.record_process(0.2)
    assert m.process_hist[LATENCY_BUCKETS_MS.index(0.25)] == 1 and m.process_samples == 1
    figures = aggregate([m, TaskMetrics("b", 3)])["histograms"]
    assert sum(figures["exec"]["counts"]) == 3 and figures["exec"]["sum_ms"] == 30.0


def test_the_counts_survive_a_restart_of_the_worker():
    """The master keeps a dead process's counts and adds them to its successor's, per bucket."""
    dead, alive = TaskMetrics("s", 1), TaskMetrics("s", 1)
    dead.record_complete(3.0)
    dead.record_complete(3.0)
    alive.record_complete(400.0)
    carried: dict = {}
    add_counters(carried, metrics_to_dict(dead))
    m = metrics_from_dict(metrics_to_dict(alive), carried)
    assert m.complete_hist[LATENCY_BUCKETS_MS.index(5.0)] == 2
    assert m.complete_hist[LATENCY_BUCKETS_MS.index(500.0)] == 1
    assert m.complete_samples == 3 and len(m.complete_hist) == len(LATENCY_BUCKETS_MS) + 1


def test_bucket_index_agrees_with_bisect_over_the_bounds():
    from bisect import bisect_left

    from squall.runtime.metrics import bucket_index

    values = [0.0, -1.0, 1e9] + [b * f for b in LATENCY_BUCKETS_MS for f in (0.999, 1.0, 1.001)]
    for ms in values:
        assert bucket_index(ms) == bisect_left(LATENCY_BUCKETS_MS, ms), ms
