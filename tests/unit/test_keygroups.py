"""Key groups (issue 38 item 1): the fields grouping and keyed state place a key alike."""

from __future__ import annotations

import pytest

from squall.api.fields import Fields
from squall.runtime.hashing import stable_hash
from squall.runtime.keygroups import default_table, key_group, moved, num_key_groups, owned_groups
from squall.runtime.routing import FieldsRouter
from squall.runtime.stateful import key_owner

STREAM = Fields("word", "count")
WORDS = [f"w{i}" for i in range(2000)] + ["straße", "日本", 7, 7.0, None, ("a", 1)]


def test_key_group_is_the_stable_hash_modulo_k():
    assert key_group("the", 4096) == stable_hash("the") % 4096
    assert key_group(["a", 1], 64) == stable_hash(["a", 1]) % 64


def test_the_default_table_gives_contiguous_ranges_and_every_task_a_share():
    table = default_table(3, 4096)
    assert len(table) == 4096 and table == sorted(table)
    assert [table.count(i) for i in range(3)] == [1366, 1365, 1365]
    assert owned_groups(default_table(4, 16), 1) == [4, 5, 6, 7]
    with pytest.raises(ValueError, match="at most 8"):
        default_table(9, 8)


def test_moved_names_the_key_groups_that_change_owner():
    assert moved(default_table(2, 8), default_table(2, 8)) == {}
    assert moved(default_table(2, 4), default_table(4, 4)) == {1: (0, 1), 2: (1, 2), 3: (1, 3)}
    with pytest.raises(ValueError, match="cannot change"):
        moved([0, 0], [0, 0, 0])


@pytest.mark.parametrize("tasks", [1, 3, 4, 12])
@pytest.mark.parametrize("k", [4096, 16])
def test_the_fields_grouping_routes_each_key_to_the_task_that_owns_its_key_group(tasks, k):
    targets = list(range(10, 10 + tasks))
    route = FieldsRouter(targets, STREAM, Fields("word"), k)
    table = default_table(tasks, k)
    for w in WORDS:
        [task] = route([w, 1])
        index = targets.index(task)
        assert index == table[key_group(w, k)] == key_owner(w, tasks, k)


def test_several_fields_use_the_list_of_values_as_the_key():
    route = FieldsRouter([1, 2, 3], STREAM, Fields("count", "word"), 64)
    assert route(["x", 5]) == [[1, 2, 3][default_table(3, 64)[key_group([5, "x"], 64)]]]


def test_set_table_switches_the_routing_between_two_tuples():
    route = FieldsRouter([1, 2], STREAM, Fields("word"), 8)
    before = {w: route([w, 0])[0] for w in WORDS}
    route.set_table([1, 2, 3, 4], default_table(4, 8))
    after = {w: route([w, 0])[0] for w in WORDS}
    assert set(after.values()) == {1, 2, 3, 4}
    assert all(after[w] == [1, 2, 3, 4][default_table(4, 8)[key_group(w, 8)]] for w in WORDS)
    assert before != after
    with pytest.raises(ValueError, match="cannot change"):
        route.set_table([1], [0] * 4)


def test_num_key_groups_reads_the_setting_with_its_default():
    assert num_key_groups({}) == 4096 and num_key_groups({"topology.key.groups": 12}) == 12
    with pytest.raises(ValueError, match="topology.key.groups"):
        num_key_groups({"topology.key.groups": 0})


def test_a_component_that_cannot_follow_key_groups_says_why():
    from squall import TopologyBuilder
    from squall.runtime.keygroups import live_rescale_blocker
    from squall.windows import Count, StatefulWindowedBolt
    from tests.integration.components import ListSpout, SplitBolt, StatefulCount

    class Win(StatefulWindowedBolt):
        def execute(self, window):
            pass

    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([["a"]]), 1)
    b.set_bolt("split", SplitBolt(), 2).shuffle_grouping("spout")
    b.set_bolt("count", StatefulCount(), 2).fields_grouping("split", Fields("word"))
    b.set_bolt("one", StatefulCount(), 1).global_grouping("split")
    b.set_bolt("pkg", StatefulCount(), 2).partial_key_grouping("split", Fields("word"))
    win = Win().with_tumbling_window(Count(2)).with_persistence()
    b.set_bolt("win", win, 2).fields_grouping("split", Fields("word"))
    t = b.create_topology()
    assert live_rescale_blocker(t, "count") is None and live_rescale_blocker(t, "split") is None
    assert live_rescale_blocker(t, "one") == "'one' reads split:default by global grouping " \
                                            "(every tuple to the lowest task id)"
    assert "partial key grouping" in live_rescale_blocker(t, "pkg")
    assert live_rescale_blocker(t, "win") == "'win' keeps windowed state, which is not kept by key group"


def test_a_rebalance_may_go_past_a_topology_wide_task_count():
    from squall import TopologyBuilder
    from squall.runtime.plan import make_plan
    from squall.runtime.submission import prepare_conf, with_parallelism
    from tests.integration.components import ListSpout, SplitBolt, StatefulCount

    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([["a"]]), 1)
    b.set_bolt("split", SplitBolt(), 1).shuffle_grouping("spout")
    b.set_bolt("count", StatefulCount(), 4).fields_grouping("split", Fields("word"))
    conf = prepare_conf({"topology.tasks": 4}, b.create_topology())
    for n in (12, 4, 2):
        plan = make_plan(with_parallelism(b.create_topology(), {"count": n}), conf)
        assert len(plan.component_tasks["count"]) == n
