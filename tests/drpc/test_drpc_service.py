"""Storm's DRPCTest, ported: the DRPC service's blocking execute, failures and timeouts."""

from __future__ import annotations

import concurrent.futures
import time

import pytest

from squall.drpc import DRPC, DRPCExecutionError
from squall.runtime import clock

pool = concurrent.futures.ThreadPoolExecutor(4)


def next_available_request(server, func, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = server.fetch_request(func)
        if got is not None:
            return got
        time.sleep(0.001)
    raise AssertionError(f"no request for {func!r}")


def test_good_blocking():
    server = DRPC(timeout_secs=100)
    found = pool.submit(server.execute, "testing", "test")
    rid, args = next_available_request(server, "testing")
    assert args == "test" and rid
    server.return_result(rid, "tested")
    assert found.result(timeout=1) == "tested"
    assert server.pending() == 0


def test_failed_blocking():
    server = DRPC(timeout_secs=100)
    found = pool.submit(server.execute, "testing", "test")
    rid, _ = next_available_request(server, "testing")
    server.fail_request(rid, "because")
    with pytest.raises(DRPCExecutionError) as info:
        found.result(timeout=1)
    assert info.value.type == "FAILED_REQUEST"
    assert "because" in str(info.value)


def test_dequeue_after_timeout_on_simulated_time():
    with clock.simulation() as sim:
        server = DRPC(timeout_secs=1)
        found = pool.submit(server.execute, "testing", "test")
        time.sleep(0.2)
        assert not found.done()
        sim.advance(0.9)
        time.sleep(0.2)
        assert not found.done()  # not before its time
        sim.advance(0.2)
        with pytest.raises(DRPCExecutionError) as info:
            found.result(timeout=2)
    assert info.value.type == "SERVER_TIMEOUT"
    assert server.fetch_request("testing") is None  # the timed-out request left the queue
    assert server.pending() == 0


def test_dequeue_after_timeout_on_real_time():
    server = DRPC(timeout_secs=0.5)
    start = time.monotonic()
    with pytest.raises(DRPCExecutionError) as info:
        server.execute("testing", "test")
    spent = time.monotonic() - start
    assert 0.5 <= spent < 1.0
    assert info.value.type == "SERVER_TIMEOUT"
    assert server.fetch_request("testing") is None


def test_a_result_after_a_timeout_is_dropped_and_first_answer_wins():
    server = DRPC(timeout_secs=100)
    found = pool.submit(server.execute, "f", "a")
    rid, _ = next_available_request(server, "f")
    server.return_result(rid, "one")
    server.fail_request(rid)
    server.return_result(rid, "two")
    assert found.result(timeout=1) == "one"
    server.return_result(rid, "late")  # unknown by now: ignored


def test_requests_are_served_per_function_in_order():
    server = DRPC(timeout_secs=100)
    a1 = pool.submit(server.execute, "a", "1")
    time.sleep(0.05)
    a2 = pool.submit(server.execute, "a", "2")
    b = pool.submit(server.execute, "b", "x")
    time.sleep(0.05)
    first, second = next_available_request(server, "a"), next_available_request(server, "a")
    assert (first[1], second[1]) == ("1", "2")
    assert server.fetch_request("a") is None
    rb, _ = next_available_request(server, "b")
    for rid, value in ((first[0], "r1"), (second[0], "r2"), (rb, "rb")):
        server.return_result(rid, value)
    assert (a1.result(1), a2.result(1), b.result(1)) == ("r1", "r2", "rb")


def test_close_fails_outstanding_requests_with_shutdown():
    server = DRPC(timeout_secs=100)
    found = pool.submit(server.execute, "f", "a")
    next_available_request(server, "f")
    server.close()
    with pytest.raises(DRPCExecutionError) as info:
        found.result(timeout=1)
    assert info.value.type == "SERVER_SHUTDOWN"
    with pytest.raises(DRPCExecutionError):
        server.execute("f", "b")


def test_join_result_forgets_halves_of_requests_that_died():
    from squall.drpc.bolts import JoinResult
    from squall.testing import test_tuple

    class Collector:
        def __init__(self):
            self.emitted, self.acked, self.failed = [], [], []

        def emit(self, values, anchors=None, stream="default"):
            self.emitted.append(values)

        def ack(self, tup):
            self.acked.append(tup)

        def fail(self, tup):
            self.failed.append(tup)

    with clock.simulation() as sim:
        bolt, out = JoinResult("prepare-request"), Collector()
        bolt.prepare({"topology.message.timeout.secs": 10}, None, out)
        lost = test_tuple([1, "info-1"], component="prepare-request", stream="ret")
        bolt.execute(lost)  # its result never comes: the request's tree failed
        sim.advance(15)
        bolt.execute(test_tuple([2, "info-2"], component="prepare-request", stream="ret"))
        assert out.failed == []
        sim.advance(6)  # 21 s > 2 x 10 s: the first half is given up
        bolt.execute(test_tuple([2, "forty-two"], component="bolt3"))
        assert out.failed == [lost]
        assert out.emitted == [["forty-two", "info-2"]]


def test_fetch_long_polls_until_a_request_arrives():
    server = DRPC(timeout_secs=100)
    start = time.monotonic()
    assert server.fetch_request("f", wait=0.2) is None
    assert 0.2 <= time.monotonic() - start < 1.0
    fetched = pool.submit(server.fetch_request, "f", 5.0)
    time.sleep(0.1)
    found = pool.submit(server.execute, "f", "a")
    rid, args = fetched.result(timeout=2)  # woken by the request, long before 5 s
    assert args == "a"
    server.return_result(rid, "ok")
    assert found.result(timeout=1) == "ok"
