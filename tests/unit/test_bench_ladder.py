"""benchmarks.ladder's in-thread rungs and its table; benchmarks.crossing's in-thread figures."""

from __future__ import annotations

import pytest

from benchmarks import crossing, ladder


@pytest.mark.parametrize("workload", ladder.WORKLOADS)
def test_an_in_thread_rung_times_acked_sentences_of_the_benchmarks_own_topology(workload: str) -> None:
    us = ladder.in_thread(workload, 2, sentences=300, repeat=1, warmup=50)
    assert 0 < us < 10_000


def test_the_table_gives_each_rung_its_multiple_ceiling_and_share_and_the_steps_between() -> None:
    rows = [{"rung": "API calls, free engine", "us": 2.0},
            {"rung": "squall, 1 worker, this thread", "us": 4.0},
            {"rung": "squall-spark, local[2]", "us": 5.0, "rate": 300_000.0, "cores": 1.5}]
    lines = ladder.table("pipeline", rows, 2)
    one = lines[2]
    assert "4.00" in one and " 2.00 " in one and "500,000" in one and "0.50" in one
    cluster = lines[3]
    # 300,000/s against the API's ceiling of 2 cores / 2 us = 1,000,000/s
    assert "300,000/s on 1.50 cores = 0.30 of the API's ceiling" in cluster
    assert "400,000" in cluster and "0.40" in cluster  # its own ceiling and the API's share
    assert lines[-1].split("steps: ")[1] == ("squall, 1 worker, this thread +2.00 us; "
                                             "squall-spark, local[2] +1.00 us")


def test_the_in_thread_crossing_figures_count_what_crossed_between_two_workers() -> None:
    figures = crossing.in_process(2, sentences=200)
    assert figures["sentences"] == 200
    assert figures["crossing tuples"] > 0
    assert 0 < figures["crossing share"] < 1
