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
