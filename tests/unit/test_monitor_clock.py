"""RELIABILITY C12: a wall-clock jump of an hour, either way, changes no elapsed time the
Nimbus monitor decides on (launch timeouts, relaunch backoff)."""

import time

from squall.nimbus.monitor import Monitor


def test_c12_wall_clock_jumps_do_not_change_elapsed_times(monkeypatch):
    monitor = Monitor.__new__(Monitor)
    monitor._first = {}
    real = time.time
    stamp = real() - 5  # launched 5 s ago, by another process
    assert 4.9 < monitor.elapsed(("started", "t"), stamp) < 6
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # the clock jumps an hour ahead
    assert monitor.elapsed(("started", "t"), stamp) < 6
    monkeypatch.setattr(time, "time", lambda: real() - 3600)  # and an hour back
    assert 4.9 < monitor.elapsed(("started", "t"), stamp) < 6


def test_a_stamp_first_seen_late_counts_from_the_stamp():
    monitor = Monitor.__new__(Monitor)
    monitor._first = {}
    assert 99 < monitor.elapsed(("relaunched", "t"), time.time() - 100) < 101
