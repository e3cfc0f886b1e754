"""The master's worker registry under a fake clock: fencing, liveness, backoff, carried metrics."""

from __future__ import annotations

import pytest

from squall.spark.registry import BACKOFF_MAX, WorkerRegistry, backoff

pytestmark = pytest.mark.spark


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def reg(worker, launch, attempt=0, pid=100):
    return {"worker": worker, "launch": launch, "attempt": attempt, "pid": pid, "host": "h",
            "address": f"tcp://127.0.0.1:{1000 + pid}"}


def make():
    clock = Clock()
    return WorkerRegistry(2, heartbeat_timeout=5, start_timeout=30, clock=clock), clock


def test_backoff_doubles_and_caps():
    assert [backoff(n) for n in (0, 1, 2, 3)] == [0.0, 0.5, 1.0, 2.0]
    assert backoff(50) == BACKOFF_MAX


def test_registration_of_an_older_launch_is_refused():
    r, _ = make()
    assert r.launched(0) == 1
    assert r.register(reg(0, 1), b"a")[0]
    assert r.launched(0) == 2
    assert r.register(reg(0, 1, pid=101), b"b") == (False, None)
    accepted, replaced = r.register(reg(0, 2, pid=102), b"c")
    assert accepted and replaced is None  # launch 1 was retired when launch 2 began
    assert r.seen(b"a") is None and r.seen(b"c").pid == 102


def test_a_spark_retry_replaces_the_previous_attempt():
    r, _ = make()
    r.launched(0)
    r.register(reg(0, 1, attempt=0, pid=1), b"a0")
    accepted, replaced = r.register(reg(0, 1, attempt=1, pid=2), b"a1")
    assert accepted and replaced.pid == 1
    assert r.addresses() == {0: "tcp://127.0.0.1:1002"}
    assert r.register(reg(0, 1, attempt=0, pid=3), b"late")[0] is False


def test_silent_worker_is_dead_after_the_heartbeat_timeout():
    r, clock = make()
    for i in (0, 1):
        r.launched(i)
        r.register(reg(i, 1, pid=i), f"w{i}".encode())
    clock.now = 4.0
    r.seen(b"w0")
    clock.now = 5.5
    assert r.dead() == [1]
    assert r.failed(1, "silent") == 0.5
    assert r.dead() == [] and r.due() == []
    clock.now = 6.0
    assert r.due() == [1]


def test_never_registered_launch_is_dead_after_start_timeout():
    r, clock = make()
    r.launched(0)
    clock.now = 31
    assert r.dead() == [0]


def test_counters_of_dead_processes_are_carried():
    r, _ = make()
    r.launched(0)
    r.register(reg(0, 1), b"a")
    r.seen(b"a").metrics = [{"component": "c", "task": 3, "acked": 10, "emitted": 12, "capacity": 0.5}]
    r.failed(0, "gone")
    assert r.carried == {3: {"acked": 10, "emitted": 12}}


def test_failures_reset_once_healthy():
    r, clock = make()
    r.launched(0)
    r.failed(0, "x")
    r.failed(0, "y")
    assert r.slots[0].failures == 2
    r.launched(0)
    inc = r.register(reg(0, 2), b"a") and r.seen(b"a")
    inc.started = True
    clock.now += 11
    r.seen(b"a")
    assert r.slots[0].failures == 0 and r.slots[0].restarts == 1
