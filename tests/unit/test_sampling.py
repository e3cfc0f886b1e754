"""TupleSampler: the tap that samples emitted tuples while a topology is debugged."""

from __future__ import annotations

import random

import pytest

from squall.runtime.sampling import MAX_VALUE_CHARS, TupleSampler


def test_samples_the_share_asked_of_the_components_asked():
    s = TupleSampler(0.25, ["split"], worker=3, rng=random.Random(7), time_ms=lambda: 1_500)
    for i in range(4000):
        s("split", "words", [f"w{i}", i], 4)
        s("count", "default", ["x", 1], 5)
    taken = s.drain()
    assert 800 <= len(taken) <= 1200  # a quarter of 4000, give or take
    assert {t["component"] for t in taken} == {"split"}
    assert taken[0] == {"component": "split", "stream": "words", "task": 4, "worker": 3,
                        "values": taken[0]["values"], "time": 1.5}
    assert s.drain() == []


def test_every_tuple_at_full_rate_and_a_bounded_buffer():
    s = TupleSampler(1.0, None, worker=0, limit=10)
    for i in range(25):
        s("any", "default", [i], 1)
    taken = s.drain()
    assert [t["values"] for t in taken] == [[i] for i in range(15, 25)]
    assert s.dropped == 15


def test_values_are_shown_not_kept():
    s = TupleSampler(1.0, None, worker=0)
    blob = "x" * (MAX_VALUE_CHARS + 50)
    s("c", "default", [None, 2.5, {"k": object}, blob], 1)
    values = s.drain()[0]["values"]
    assert values[:2] == [None, 2.5]
    assert values[2].startswith("{'k': <class 'object'>")
    assert len(values[3]) == MAX_VALUE_CHARS + 1


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.5])
def test_a_rate_out_of_range_is_refused(rate):
    with pytest.raises(ValueError, match="sampling rate"):
        TupleSampler(rate, None, worker=0)
