"""``LoopCalls``: closures posted to the topology master's loop thread (no Spark needed)."""

from __future__ import annotations

import threading

import pytest

from squall.spark.loop_calls import LoopCalls


def test_call_runs_on_the_loop_thread_and_returns_its_result():
    stop = threading.Event()
    ran_on: list[str] = []

    def loop() -> None:
        while not stop.is_set():
            calls.run_pending()
            stop.wait(0.001)

    thread = threading.Thread(target=loop, name="the-loop")
    calls = LoopCalls(thread)
    thread.start()
    try:
        assert calls.call(lambda: ran_on.append(threading.current_thread().name) or 42) == 42
        with pytest.raises(KeyError, match="gone"):
            calls.call(lambda: {}["gone"])  # the caller gets the loop thread's exception
    finally:
        stop.set()
        thread.join(5)
    assert ran_on == ["the-loop"]


def test_call_runs_in_place_when_the_loop_is_not_running():
    calls = LoopCalls(threading.Thread(target=lambda: None))
    assert calls.call(lambda: threading.current_thread().name) == threading.current_thread().name


def test_posted_closures_wait_for_the_loop_and_run_in_order():
    calls = LoopCalls(threading.Thread(target=lambda: None))
    seen: list[int] = []
    futures = [calls.post(lambda i=i: seen.append(i) or i) for i in range(3)]
    assert seen == [] and not any(f.done() for f in futures)
    calls.run_pending()
    assert seen == [0, 1, 2] and [f.result(0) for f in futures] == [0, 1, 2]
