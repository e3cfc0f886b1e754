"""Stream groupings (squall/runtime/routing.py)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from squall.api.components import CustomStreamGrouping, GlobalStreamId
from squall.api.fields import Fields
from squall.api.topology import Grouping
from squall.runtime.hashing import hash_values, stable_hash
from squall.runtime.keygroups import default_table
from squall.runtime.routing import (
    ConstantRouter,
    CustomRouter,
    DirectOnly,
    FieldsRouter,
    ShuffleRouter,
    make_router,
)

TARGETS = [12, 10, 11, 13]  # unsorted on purpose
STREAM_FIELDS = Fields("word", "count")
CONTEXT = object()  # the routers only hand it to custom groupings


class EvenOnly(CustomStreamGrouping):
    def prepare(self, context, stream, target_tasks):
        self.prepared = (context, stream, list(target_tasks))
        self.targets = [t for t in target_tasks if t % 2 == 0]

    def choose_tasks(self, task_id, values):
        return self.targets


class Rogue(CustomStreamGrouping):
    def choose_tasks(self, task_id, values):
        return [999]


def router(kind, *, task=1, targets=TARGETS, local=frozenset(), fields=None, custom=None):
    return make_router(
        Grouping(kind, fields=fields, custom=custom), task=task, targets=list(targets),
        local_tasks=set(local), stream="default", stream_fields=STREAM_FIELDS,
        context=CONTEXT, component="counter", source="words",
    )


# ---- shuffle, none, local-or-shuffle --------------------------------------------------


@pytest.mark.parametrize("kind", ["shuffle", "none", "local_or_shuffle"])
@pytest.mark.parametrize("emitter", [1, 2, 99])
def test_shuffle_is_balanced_at_every_step(kind, emitter):
    route = router(kind, task=emitter)
    counts = Counter({t: 0 for t in TARGETS})
    for _ in range(len(TARGETS) * 50 + 3):
        (t,) = route(["w", 1])
        counts[t] += 1
        assert max(counts.values()) - min(counts.values()) <= 1
    assert set(counts) == set(TARGETS)


def test_shuffle_order_changes_between_cycles():
    route = ShuffleRouter(list(range(1, 9)), seed=3)
    cycles = {tuple(route([])[0] for _ in range(8)) for _ in range(20)}
    assert len(cycles) > 1  # reshuffled, not round-robin
    assert all(sorted(c) == list(range(1, 9)) for c in cycles)


class CountingRandom:
    """Stands in for a router's ``random.Random``: counts shuffles."""

    def __init__(self) -> None:
        self.shuffles = 0

    def shuffle(self, order: list) -> None:
        self.shuffles += 1


def test_a_shuffle_over_one_target_never_reshuffles():
    route = ShuffleRouter([7], seed=3)
    route._rng = CountingRandom()
    assert [route([])[0] for _ in range(50)] == [7] * 50
    assert route._rng.shuffles == 0  # a Python call per tuple for an order of one


def test_a_shuffle_over_two_targets_reshuffles_each_cycle():
    route = ShuffleRouter([7, 8], seed=3)
    route._rng = CountingRandom()
    assert sorted(route([])[0] for _ in range(10)) == [7] * 5 + [8] * 5
    assert route._rng.shuffles == 4  # at the start of cycles 2-5


def test_shuffle_emitters_are_seeded_by_task_deterministically():
    a = [router("shuffle", task=5)([])[0] for _ in range(20)]
    b = [router("shuffle", task=5)([])[0] for _ in range(20)]
    assert a == b


def test_local_or_shuffle_prefers_local_tasks():
    route = router("local_or_shuffle", local={11, 13, 42})
    seen = Counter(route([])[0] for _ in range(100))
    assert set(seen) == {11, 13}
    assert abs(seen[11] - seen[13]) <= 1


def test_local_or_shuffle_falls_back_to_all_targets():
    route = router("local_or_shuffle", local={42})
    assert {route([])[0] for _ in range(40)} == set(TARGETS)


# ---- fields ----------------------------------------------------------------------------


def test_fields_same_key_same_task():
    route = router("fields", fields=Fields("word"))
    for word in ["a", "b", "ünï", None, float("nan"), 1, "1"]:
        first = route([word, 0])
        assert all(route([word, n]) == first for n in range(10))


def test_fields_equal_values_of_different_types_route_together():
    route = router("fields", fields=Fields("word"))
    assert route([1, 0]) == route([1.0, 5]) == route([True, 9])


def test_fields_uses_every_task_with_many_keys():
    route = router("fields", fields=Fields("word"))
    counts = Counter(route([f"key{i}", 0])[0] for i in range(2000))
    assert set(counts) == set(TARGETS)
    assert min(counts.values()) > 2000 / len(TARGETS) / 2  # roughly even


def test_fields_routes_by_key_group_over_sorted_targets():
    # the key's key group (stable_hash % topology.key.groups), then the task that owns it
    route = router("fields", fields=Fields("word"))
    assert route(["hello", 3]) == [sorted(TARGETS)[default_table(4, 4096)[stable_hash("hello") % 4096]]]


def test_fields_on_several_fields_selects_in_grouping_order():
    route = FieldsRouter(TARGETS, STREAM_FIELDS, Fields("count", "word"))
    assert route(["w", 7]) == [sorted(TARGETS)[default_table(4, 4096)[hash_values([7, "w"]) % 4096]]]
    other = FieldsRouter([5, 6, 7], STREAM_FIELDS, Fields("count", "word"))
    assert {other(["w", 7])[0] for _ in range(5)} == {other(["w", 7])[0]}


def test_fields_unknown_field_is_refused():
    with pytest.raises(KeyError, match="nope"):
        FieldsRouter(TARGETS, STREAM_FIELDS, Fields("nope"))


@given(st.lists(st.one_of(st.text(), st.integers(), st.none()), min_size=1, max_size=30))
def test_fields_routing_is_a_function_of_the_key(keys):
    a = router("fields", task=1, fields=Fields("word"))
    b = router("fields", task=2, fields=Fields("word"))  # another emitter, same answer
    for k in keys:
        assert a([k, 0]) == b([k, 1])
        assert a([k, 0])[0] in TARGETS


# ---- all, global, direct ---------------------------------------------------------------


def test_all_goes_to_every_task():
    assert sorted(router("all")(["w", 1])) == sorted(TARGETS)


def test_global_goes_to_the_lowest_task_id():
    route = router("global")
    assert {tuple(route([w, 0])) for w in "abcdef"} == {(10,)}


def test_constant_router_returns_its_targets():
    assert ConstantRouter([3, 4])([]) == [3, 4]


def test_direct_grouping_marks_the_targets():
    route = router("direct")
    assert isinstance(route, DirectOnly)
    assert route.targets == frozenset(TARGETS)


# ---- custom ----------------------------------------------------------------------------


def test_custom_grouping_is_prepared_and_honoured():
    grouping = EvenOnly()
    route = router("custom", custom=grouping)
    assert grouping.prepared == (CONTEXT, GlobalStreamId("words", "default"), sorted(TARGETS))
    assert grouping.prepared[1].component_id == "words" and grouping.prepared[1].stream_id == "default"
    assert route(["w", 1]) == [10, 12]


def test_custom_grouping_choosing_a_foreign_task_raises_naming_the_component():
    route = router("custom", custom=Rogue())
    with pytest.raises(ValueError, match=r"Rogue.*999.*'counter'"):
        route(["w", 1])


def test_custom_router_accepts_an_empty_choice():
    class Nothing(CustomStreamGrouping):
        def choose_tasks(self, task_id, values):
            return []

    assert CustomRouter(Nothing(), 1, TARGETS, "c")([]) == []


def test_custom_router_passes_the_emitting_task():
    class Echo(CustomStreamGrouping):
        def choose_tasks(self, task_id, values):
            return [task_id]

    assert CustomRouter(Echo(), 11, TARGETS, "c")([]) == [11]


def test_unknown_grouping_kind_raises():
    with pytest.raises(ValueError, match="unknown grouping 'bogus'"):
        router("bogus")
