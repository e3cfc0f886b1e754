"""A worker process measures its own RSS and CPU for its heartbeats (issue 31, item 11)."""

from __future__ import annotations

import os
import time

from squall.runtime.process_usage import ProcessUsage, cpu_seconds, rss_bytes
from squall.testing import simulated_time


def test_cpu_percent_is_the_cpu_used_between_two_samples_on_simulated_time():
    with simulated_time() as clock:
        from squall.runtime import clock as runtime_clock

        cpu = [10.0]
        usage = ProcessUsage(clock=runtime_clock.monotonic, cpu=lambda: cpu[0], rss=lambda: 80 * 1024 * 1024)
        clock.advance(2.0)
        cpu[0] = 12.0  # one core busy for 2 s
        assert usage.sample() == {"rss_mb": 80.0, "cpu_secs": 12.0, "cpu_percent": 100.0}
        clock.advance(4.0)
        cpu[0] = 13.0  # a quarter of a core over 4 s
        assert usage.sample()["cpu_percent"] == 25.0
        assert usage.sample()["cpu_percent"] == 0.0  # no time passed: nothing to divide by


def test_the_real_readings_are_this_process():
    with open(f"/proc/{os.getpid()}/status") as f:
        vmrss_kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    assert abs(rss_bytes() / 1024 - vmrss_kb) < 0.2 * vmrss_kb
    usage = ProcessUsage()
    before, t0 = cpu_seconds(), time.monotonic()
    # burn 0.3 s of this process's own CPU: on a loaded machine (make test runs two streams
    # on two cores) that takes longer in wall time, so the expected percent is measured too
    while cpu_seconds() - before < 0.3:
        sum(range(1000))
    sample = usage.sample()
    expected = 100.0 * (cpu_seconds() - before) / (time.monotonic() - t0)
    assert sample["cpu_secs"] >= before + 0.3 - 0.01  # rounded to hundredths
    assert 0.8 * expected < sample["cpu_percent"] < 1.2 * expected + 1.0
