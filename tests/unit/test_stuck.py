"""The stuck-task detector and the cycle finder: pure, on a hand-driven clock."""

from squall.runtime.stuck import StuckDetector, cycles


def describe():
    return {"component": "lookup", "task": 3, "method": "execute"}


def test_a_call_seen_past_the_limit_is_stuck_once_and_moved_when_it_ends():
    d = StuckDetector(limit=30)
    call = object()
    assert d.observe(0, "loop", call, 3, describe) == []
    assert d.observe(29, "loop", call, 3, describe) == []
    (event,) = d.observe(30, "loop", call, 3, describe)
    assert event[0] == "stuck" and event[1] == 3 and event[2]["secs"] == 30
    assert d.observe(45, "loop", call, 3, describe) == []  # reported once
    assert d.stuck[3]["secs"] == 45
    (moved,) = d.observe(46, "loop", None, None, describe)
    assert moved[0] == "moved" and moved[1] == 3 and d.stuck == {}


def test_many_short_calls_are_never_stuck():
    d = StuckDetector(limit=1)
    for t in range(100):
        assert d.observe(t * 0.5, "loop", object(), 3, describe) == []  # a new call each time


def test_a_new_call_after_a_stuck_one_starts_its_own_clock():
    d = StuckDetector(limit=10)
    first, second = object(), object()
    d.observe(0, "t", first, 1, describe)
    assert d.observe(10, "t", first, 1, describe)[0][0] == "stuck"
    events = d.observe(11, "t", second, 1, describe)
    assert [e[0] for e in events] == ["moved"]
    assert d.observe(20, "t", second, 1, describe) == []
    assert d.observe(21, "t", second, 1, describe)[0][0] == "stuck"


def test_threads_are_watched_apart():
    d = StuckDetector(limit=5)
    a, b = object(), object()
    d.observe(0, "loop", a, 1, describe)
    d.observe(3, "task-2", b, 2, describe)
    assert [e[1] for e in d.observe(5, "loop", a, 1, describe)] == [1]
    assert d.observe(5, "task-2", b, 2, describe) == []
    assert [e[1] for e in d.observe(8, "task-2", b, 2, describe)] == [2]


def test_cycles_are_found_and_named():
    assert cycles([("spout", "a"), ("a", "b")]) == []
    assert cycles([("spout", "a"), ("a", "b"), ("b", "a"), ("b", "sink")]) == [["a", "b"]]
    assert cycles([("a", "a")]) == [["a"]]
    two = [("a", "b"), ("b", "c"), ("c", "a"), ("x", "y"), ("y", "x")]
    assert cycles(two) == [["a", "b", "c"], ["x", "y"]]


# ---- a chain: several user calls on one thread's stack (issue 41 item 6) ------------------


def by_index(names):
    return lambda i: {"component": names[i], "task": i, "method": "call"}


def test_the_innermost_call_past_the_limit_is_the_stuck_one():
    """A fused bolt blocked inside the spout's next_tuple: the bolt is stuck, not the spout."""
    d = StuckDetector(limit=10)
    spout, bolt = object(), object()
    calls = [(spout, 1), (bolt, 2)]
    assert d.observe_stack(0, "loop", calls, by_index(["in", "db"])) == []
    ((kind, task, info),) = d.observe_stack(10, "loop", calls, by_index(["in", "db"]))
    assert (kind, task, info["component"]) == ("stuck", 2, "db")
    assert list(d.stuck) == [2]


def test_a_long_call_whose_inner_calls_are_short_is_itself_stuck():
    """A next_tuple that keeps emitting to a fused bolt for longer than the limit."""
    d = StuckDetector(limit=10)
    spout = object()
    for t in range(10):
        assert d.observe_stack(t, "loop", [(spout, 1), (object(), 2)], by_index(["in", "map"])) == []
    ((kind, task, info),) = d.observe_stack(10, "loop", [(spout, 1), (object(), 2)],
                                            by_index(["in", "map"]))
    assert (kind, task, info["component"]) == ("stuck", 1, "in")


def test_an_inner_call_past_the_limit_after_its_caller_takes_the_report_over():
    d = StuckDetector(limit=10)
    spout, bolt = object(), object()
    d.observe_stack(0, "loop", [(spout, 1)], by_index(["in"]))
    d.observe_stack(5, "loop", [(spout, 1), (bolt, 2)], by_index(["in", "db"]))
    assert [(k, t) for k, t, _ in d.observe_stack(10, "loop", [(spout, 1), (bolt, 2)],
                                                   by_index(["in", "db"]))] == [("stuck", 1)]
    events = d.observe_stack(15, "loop", [(spout, 1), (bolt, 2)], by_index(["in", "db"]))
    assert [(k, t) for k, t, _ in events] == [("moved", 1), ("stuck", 2)]
    assert list(d.stuck) == [2]
    assert [(k, t) for k, t, _ in d.observe_stack(16, "loop", [], by_index([]))] == [("moved", 2)]
    assert d.stuck == {} and d.watches == {}


# Two samplers and four threads always inside a fresh call, with the collector at a threshold
# of 2 and cyclic garbage whose finalizer releases the GIL: on CPython 3.11 a collection
# started inside sys._current_frames() runs that finalizer while the thread list is locked,
# and the other sampler, holding the GIL, waits for the lock (python/cpython#106883). With
# sys._current_frames() called bare the process hangs in every run; through current_frames
# it finishes in about its 2 seconds.
_SAMPLERS = """
import gc, sys, threading, time
from squall.runtime.stuck import current_frames

class Garbage:
    def __init__(self):
        self.me = self
    def __del__(self):
        time.sleep(0)  # releases the GIL, as a C extension's dealloc may

stop = time.monotonic() + 2.0
def leaf():
    return 1
def churn():
    while time.monotonic() < stop:
        leaf()
def sample():
    while time.monotonic() < stop:
        Garbage()
        current_frames()
        time.sleep(0.0005)
gc.set_threshold(2)
sys.setswitchinterval(0.0001)
threads = [threading.Thread(target=f, daemon=True) for f in [churn] * 4 + [sample] * 2]
for t in threads:
    t.start()
for t in threads:
    t.join(20)
print("hung" if any(t.is_alive() for t in threads) else "done", flush=True)
"""


def test_taking_every_threads_frame_never_hangs_the_process_in_a_collection():
    import subprocess
    import sys

    try:
        out = subprocess.run([sys.executable, "-c", _SAMPLERS], capture_output=True, text=True,
                             timeout=40).stdout
    except subprocess.TimeoutExpired:
        out = "timed out: the process hung"
    assert out.strip() == "done", out


def test_the_collector_is_on_again_after_the_frames_are_taken_and_off_if_it_was_off():
    import gc

    from squall.runtime.stuck import current_frames

    assert gc.isenabled()
    frames = current_frames()
    import threading

    assert threading.get_ident() in frames
    assert gc.isenabled()
    gc.disable()
    try:
        current_frames()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_stuck_task_is_published_only_after_its_error_is_reported():
    # a reader takes the stuck map, then the errors (LocalCluster's info, a Spark heartbeat):
    # a task in the map must already have its StuckTaskError in the log
    from types import SimpleNamespace

    from squall.runtime.errors import ErrorLog
    from squall.runtime.stuck import Watchdog

    seen_in_map = []

    class Log(ErrorLog):
        def report(self, component, task, error, stack=None):
            seen_in_map.append(task in worker.stuck)
            return super().report(component, task, error, stack=stack)

    worker = SimpleNamespace(plan=SimpleNamespace(chains=[]), tasks={}, index=0, stuck={},
                             topology=SimpleNamespace(components={}), errors=Log())
    dog = Watchdog(worker, limit=0.5, cycle_limit=0)
    dog._on_event("stuck", 3, {**describe(), "secs": 0.6, "waits_in": "wait (x.py:1)",
                                "stack": "x.py:1", "thread": None})
    assert seen_in_map == [False]
    assert worker.stuck[3]["waits_in"] == "wait (x.py:1)" and "thread" not in worker.stuck[3]
    (error,) = worker.errors.list()
    assert "StuckTaskError" in error["message"]
