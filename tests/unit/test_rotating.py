"""RotatingMap (squall/runtime/rotating.py): expiry window (A7) and touch (A8)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from squall.runtime.rotating import RotatingMap


def test_needs_two_buckets():
    with pytest.raises(ValueError, match="at least 2 buckets"):
        RotatingMap(1)


def test_put_get_pop_contains_len_iter():
    m: RotatingMap = RotatingMap(3)
    m.put("a", 1)
    m.put_new("b", 2)
    assert m.get("a") == 1 and m.get("b") == 2
    assert m.get("zz") is None and m.get("zz", 5) == 5
    assert "a" in m and "zz" not in m
    assert len(m) == 2
    assert sorted(m) == ["a", "b"]
    assert m.pop("a") == 1
    assert m.pop("a", "gone") == "gone"
    assert len(m) == 1


def test_put_moves_an_old_key_to_the_newest_bucket():
    m: RotatingMap = RotatingMap(2)
    m.put("a", 1)
    m.rotate()
    m.put("a", 2)  # re-put: must not leave a stale copy in the old bucket
    assert len(m) == 1
    assert m.rotate() == {}
    assert m.get("a") == 2


def test_rotate_returns_what_expired():
    m: RotatingMap = RotatingMap(3)
    m.put("a", 1)
    assert m.rotate() == {}
    m.put("b", 2)
    assert m.rotate() == {}
    assert m.rotate() == {"a": 1}
    assert m.rotate() == {"b": 2}
    assert len(m) == 0


def test_touch():
    m: RotatingMap = RotatingMap(2)
    assert m.touch("a") is False
    m.put("a", 1)
    assert m.touch("a") is True  # already newest
    m.rotate()
    assert m.touch("a") is True
    assert m.rotate() == {}
    assert m.get("a") == 1


def expiry_time(buckets: int, timeout: Fraction, put_at: Fraction,
                touches: tuple[Fraction, ...] = ()) -> Fraction:
    """Simulated time at which a key put at ``put_at`` is rotated out.

    The map is rotated every ``timeout / (buckets - 1)`` starting from time 0, as the
    worker's timer does; a put or touch at the same instant as a rotation comes after it.
    """
    every = timeout / (buckets - 1)
    m: RotatingMap = RotatingMap(buckets)
    events = sorted([(put_at, "put")] + [(t, "touch") for t in touches])
    tick = 1
    for when, what in events:
        while tick * every <= when:
            assert "k" not in m.rotate() or what != "touch", "touched after it expired"
            tick += 1
        if what == "put":
            m.put("k", 1)
        else:
            assert m.touch("k")
    while True:
        if "k" in m.rotate():
            return tick * every
        tick += 1


@pytest.mark.parametrize("buckets", [2, 3, 4, 5])
@pytest.mark.parametrize("offset", [0, 1, 7, 31, 49, 50, 99])
def test_expiry_within_the_documented_window(buckets, offset):
    timeout = Fraction(10)
    put_at = Fraction(offset, 10)  # 0 .. 9.9 s: anywhere inside the rotation period
    lived = expiry_time(buckets, timeout, put_at) - put_at
    assert timeout <= lived <= timeout * (1 + Fraction(1, buckets - 1))


def test_a7_every_other_tuple_acked_timeout_10s():
    # RELIABILITY A7: timeout 10 s, 3 buckets rotated every 5 s; tuples 1, 2, 3 fed at t=0;
    # 1 and 3 acked; at 9 s tuple 2 is still pending, after 21 s it has been failed.
    pending: RotatingMap = RotatingMap(3)
    for msg in (1, 2, 3):
        pending.put(msg, f"msg{msg}")
    assert pending.pop(1) and pending.pop(3)
    failed = []
    rotations = 0
    for clock in range(1, 22):
        if clock % 5 == 0:
            failed.extend(pending.rotate())
            rotations += 1
        if clock == 9:
            assert failed == [] and 2 in pending
    assert failed == [2]
    assert rotations == 4


def test_a8_touch_keeps_an_entry_alive_across_twice_the_timeout():
    timeout = Fraction(10)
    # touched every 4 s (more often than every timeout) until 20 s, i.e. 2x timeout
    touches = tuple(Fraction(t) for t in range(4, 21, 4))
    died = expiry_time(3, timeout, Fraction(0), touches)
    assert died >= 2 * timeout
    assert died - touches[-1] >= timeout  # the timeout restarts from the last touch


def test_without_touch_the_same_entry_expires_within_the_window():
    died = expiry_time(3, Fraction(10), Fraction(0))
    assert Fraction(10) <= died <= Fraction(15)
