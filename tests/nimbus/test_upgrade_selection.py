"""Which workers a gray upgrade picks (seed 001): listed workers, else a component's, else N at random."""

from __future__ import annotations

import pytest

from squall.nimbus.errors import InvalidRequest
from squall.nimbus.upgrades import select_workers
from squall.nimbus.validation import shape, shape_difference

WORKERS = [{"worker": 0, "address": "tcp://127.0.0.1:4000", "tasks": [1, 4, 7]},
           {"worker": 1, "address": "tcp://127.0.0.1:4001", "tasks": [2, 5, 8]},
           {"worker": 2, "address": "tcp://127.0.0.1:4002", "tasks": [3, 6, 9]}]
TASKS = {"count": [1, 2], "split": [3], "sentences": [4], "__acker": [7, 8, 9]}


@pytest.mark.parametrize("selector, upgraded, want", [
    ({"workers": ["127.0.0.1:4002"]}, set(), [2]),
    ({"workers": ["1", "127.0.0.1:4000"], "worker_num": 1, "component": "split"}, set(), [0, 1]),
    ({"component": "count"}, set(), [0, 1]),
    ({"component": "count", "worker_num": 1}, set(), [0]),
    ({"component": "count"}, {0}, [1]),
    ({"worker_num": 2}, {0}, [1, 2]),  # every worker not yet upgraded (random among more: test_gray)
    ({"worker_num": 3}, {2}, [0, 1]),
    ({"worker_num": 9}, set(), [0, 1, 2]),
])
def test_selection_rules(selector, upgraded, want):
    assert select_workers(WORKERS, TASKS, selector, upgraded) == want


@pytest.mark.parametrize("selector, words", [
    ({"workers": ["127.0.0.1:9999"]}, "no worker '127.0.0.1:9999'"),
    ({"component": "nope"}, "no component 'nope'"),
    ({"component": "__acker"}, "no component"),
    ({"worker_num": 0}, "positive integer"),
    ({}, "needs workers"),
    ({"component": "count"}, "no worker left"),
])
def test_bad_selections(selector, words):
    with pytest.raises(InvalidRequest, match=words):
        select_workers(WORKERS, TASKS, selector, {0, 1} if selector == {"component": "count"} else set())


def test_shape_difference_names_the_change():
    from squall import Bolt, Fields, Spout, TopologyBuilder

    class S(Spout):
        def declare_output_fields(self, d):
            d.declare(Fields("w"))

    class B(Bolt):
        def execute(self, tup):
            pass

    def build(par: int, grouping: str = "shuffle"):
        b = TopologyBuilder()
        b.set_spout("s", S())
        d = b.set_bolt("b", B(), parallelism=par)
        d.fields_grouping("s", Fields("w")) if grouping == "fields" else d.shuffle_grouping("s")
        return b.create_topology()

    assert shape_difference(build(2), build(2)) is None
    assert shape_difference(build(2), build(3)) == ("parallelism of 'b': running 2, new 3; "
                                                    "tasks of 'b': running 2, new 3")
    assert shape_difference(build(2), build(2, "fields")).startswith(
        "inputs of 'b': running [('s', 'default', 'shuffle'")
    assert set(shape(build(2))) == {"b", "s"}
