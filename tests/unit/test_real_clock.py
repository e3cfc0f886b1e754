"""The hot path's clock reads: the real clock read in C (compiled) is Python's, any other clock is called."""

from __future__ import annotations

import time

from squall.runtime import clock as runtime_clock
from squall.runtime.host import TaskHost
from squall.runtime.round import Round, RoundConfig


def test_a_host_on_the_real_clock_reads_what_time_monotonic_reads() -> None:
    host = TaskHost(None, time.monotonic, None)
    for _ in range(1000):
        before = time.monotonic()
        now = host.clock_now()
        after = time.monotonic()
        assert before <= now <= after


def test_a_host_on_another_clock_reads_that_clock() -> None:
    ticks = iter(range(10, 20))
    host = TaskHost(None, lambda: float(next(ticks)), None)
    assert [host.clock_now(), host.clock_now()] == [10.0, 11.0]


def test_a_host_under_simulated_time_reads_the_simulated_clock() -> None:
    with runtime_clock.simulation(start=5.0) as sim:
        host = TaskHost(None, runtime_clock.current(), None)
        assert host.clock_now() == 5.0
        sim.advance(2.5)
        assert host.clock_now() == 7.5


def test_a_round_on_the_real_clock_reads_what_perf_counter_reads() -> None:
    rnd = Round(RoundConfig({}), exchange=None)
    for _ in range(1000):
        before = time.perf_counter()
        now = rnd.time()
        after = time.perf_counter()
        assert before <= now <= after


def test_a_round_given_its_own_clock_reads_it() -> None:
    rnd = Round(RoundConfig({}), exchange=None, now=lambda: 42.0)
    assert rnd.time() == 42.0
