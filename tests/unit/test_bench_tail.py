"""``benchmarks.tail``: reading ``perf sched timehist``, slow sentences blamed on the runs they saw."""

from __future__ import annotations

import math

import pytest

from benchmarks import tail

TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
     610.590106 [0001]  python[6295/6289]                   0.000      0.000      1.474
     610.590921 [0000]  <idle>                              1.081      0.000      0.082
     610.594349 [0001]  ZMQbg/IO/0[6294/6289]               0.000      0.000      3.307
     610.598819 [0001]  rcu_preempt[15]                   930.302      0.000      4.469
     610.600062 [0000]  C2 CompilerThre[6200/6187]          0.058      0.034      2.000
     610.601346 [0001]  python[6274/6154]                  19.436      0.000      0.271
"""


def test_timehist_rows_become_runs_with_their_start_and_process():
    runs = tail.parse_timehist(TIMEHIST)
    assert [(r.comm, r.tid, r.pid, r.cpu) for r in runs] == [
        ("python", 6295, 6289, 1), ("ZMQbg/IO/0", 6294, 6289, 1), ("rcu_preempt", 15, 15, 1),
        ("C2 CompilerThre", 6200, 6187, 0), ("python", 6274, 6154, 1)]
    rcu = runs[2]
    assert rcu.end == pytest.approx(610.598819)
    assert rcu.end - rcu.start == pytest.approx(0.004469)


def test_threads_are_classed_by_their_process_and_name():
    roles = tail.Roles(workers={6289}, loops={6295}, driver=6154, jvm=6187, kernel={15})
    runs = tail.parse_timehist(TIMEHIST)
    assert [roles.classify(r) for r in runs] == [
        "worker loop", "worker ZeroMQ I/O", "kernel rcu_preempt", "Spark JVM C2 compiler", "driver"]
    roles.driver_threads = {6274: "squall-master"}
    assert roles.classify(runs[4]) == "driver squall-master"
    stranger = tail.Run(0.0, 1.0, 0, "kdamond.0", 77, 77)
    assert roles.classify(stranger) == "other kdamond.0"
    roles.kernel.add(77)
    assert roles.classify(stranger) == "kernel kdamond"


def test_the_drivers_threads_are_named_by_kind():
    import threading

    seen = threading.Event()
    t = threading.Thread(target=seen.wait, name="squall-master-spread-3-pages")
    t.start()
    try:
        assert tail.driver_threads()[t.native_id] == "squall-master-pages"
    finally:
        seen.set()
        t.join()


def test_the_loop_is_each_workers_busiest_thread():
    runs = [tail.Run(0.0, 0.004, 0, "python", 11, 10), tail.Run(0.0, 0.001, 1, "ZMQbg/IO/0", 12, 10),
            tail.Run(0.0, 0.001, 0, "python", 21, 20), tail.Run(0.0, 0.003, 1, "python", 22, 20),
            tail.Run(0.0, 0.009, 1, "java", 31, 30)]
    assert tail.loop_threads(runs, {10, 20}) == {11, 22}


def test_a_slow_sentence_is_blamed_on_the_runs_that_overlap_its_life_and_no_other():
    roles = tail.Roles(workers={10}, loops={11}, driver=1, jvm=None, kernel={77})
    runs = [tail.Run(1.000, 1.006, 0, "kdamond.0", 77, 77),      # 6 ms: inside the first slow sentence's life
            tail.Run(2.000, 2.0005, 0, "kdamond.0", 77, 77),     # 0.5 ms: below the burst length
            tail.Run(3.000, 3.002, 1, "python", 11, 10),         # the worker's own loop
            tail.Run(0.100, 0.102, 1, "spread-sampler", 5, 1)]   # the driver, long before any sentence
    pairs = [(1.007, 0.008),   # born 0.999: lived through kdamond's run
             (2.004, 0.007),   # slow, but only a short run overlaps it
             (3.0025, 0.006),  # slow, the worker's own loop ran through it
             (1.5, 0.001), (1.6, 0.001), (1.7, 0.001), (1.8, 0.001)]
    a = tail.attribute(pairs, runs, roles, slow_s=0.005, burst_s=0.001, sample_every=1)
    assert a.sentences == 7 and a.slow == 3
    rows = {row[0]: row for row in a.rows}
    assert set(rows) == {"kernel kdamond", "worker loop", "driver"}
    assert rows["kernel kdamond"][1:4] == (pytest.approx(1 / 3), pytest.approx(1 / 7), 1)
    assert rows["kernel kdamond"][4] == pytest.approx(6.0)
    assert rows["worker loop"][1] == pytest.approx(1 / 3)
    assert rows["driver"][1] == 0
    assert a.outside_slow == pytest.approx(1 / 3)  # the loop's run is squall's own, not outside
    # the p99 of the six sentences no outside run touched: the slowest of them
    assert a.p99_untouched_ms == pytest.approx(7.0)
    text = tail.report(a, 100_000, 5, 1)
    assert "kernel kdamond" in text and "3 over 5 ms" in text


def test_a_run_that_ends_before_a_sentence_is_born_is_not_blamed():
    roles = tail.Roles(workers=set(), loops=set(), driver=1, jvm=None, kernel={77})
    # the long run first: the search may not stop at the longest run's reach, only at each run's end
    runs = [tail.Run(0.0, 0.030, 1, "rcu_preempt", 77, 77), tail.Run(1.0, 1.009, 0, "rcu_preempt", 77, 77)]
    a = tail.attribute([(1.020, 0.010)], runs, roles, slow_s=0.005, burst_s=0.001, sample_every=1)
    assert a.rows[0][1] == 0 and a.outside_slow == 0
    with pytest.raises(ValueError, match="no sentence"):
        tail.attribute([], runs, roles, slow_s=0.005, burst_s=0.001)
    assert math.isnan(tail.share(0, 0))


def test_the_watch_keeps_the_pairs_completed_in_the_window():
    from benchmarks.peers._measure import Latencies

    lat = Latencies()
    for done, secs in ((0.5, 0.001), (1.0, 0.002), (1.5, 0.003), (2.5, 0.004)):
        lat.add(done, secs)
    watch = tail.SchedWatch("/nonexistent")
    watch.latencies(lat, 1.0, 2.0)
    assert watch.pairs == [(1.0, 0.002), (1.5, 0.003)]
