"""Key groups on LocalCluster (issue 38 items 1, 4, 5): the fields grouping and keyed state
agree on each key's task, a stateful word count rebalanced 4 -> 12 -> 4 past its submitted
task count keeps exact counts with its key groups moved (no keys copied), state kept per
task by an earlier squall moves into key groups, and K cannot change. Simulated time."""

from __future__ import annotations

from collections import Counter

import pytest

from squall import Fields, LocalCluster, TopologyBuilder
from squall.api.errors import InvalidTopologyError
from squall.runtime import stateful
from squall.runtime.keygroups import key_group
from squall.runtime.stateful import component_items, key_owner
from squall.state import load_provider
from squall.state.keygrouped import group_namespace, task_namespace
from squall.testing import simulated_time
from tests.integration.components import RECORD, ListSpout, SplitBolt, StatefulCount, record
from tests.integration.test_stateful import SENTENCES, conf, expected
from tests.integration.test_stateful import provider as provider  # noqa: F401 - the fixture

K = 4096


class OwnerCount(StatefulCount):
    """Counts as ``StatefulCount``; records (task index, task count, word) of each tuple."""

    def prepare(self, conf, context, collector):
        super().prepare(conf, context, collector)
        self.where = (context.get_this_task_index(), len(context.get_this_component_tasks()))

    def execute(self, tup):
        if not tup.is_tick():
            record("kg.owner", (*self.where, tup["word"]))
        super().execute(tup)


def build(sentences, counters=4):
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(sentences), 2)
    b.set_bolt("split", SplitBolt(), 2).shuffle_grouping("spout")
    b.set_bolt("count", OwnerCount(), counters).fields_grouping("split", Fields("word"))
    return b.create_topology()


def acked() -> int:
    return len(RECORD["spout.acked"])


def run_until(cluster, name, n_acked, steps=900):
    for _ in range(steps):
        if acked() >= n_acked:
            return
        cluster.advance_time(0.1, increment=0.1)
    errors = [e["message"] for e in cluster.get_topology_info(name)["errors"]]
    raise AssertionError(f"acked {acked()} of {n_acked}; errors: {errors}")


def state_by_namespace(c, name):
    """{key: (namespace, value)} of the count component's committed state."""
    out = {}
    for ns, key, value in component_items(load_provider(c), c, name, "count"):
        assert key not in out, f"{key!r} kept in {out[key][0]} and {ns}"
        out[key] = (ns, value)
    return out


def test_the_fields_grouping_sends_each_key_to_the_task_that_owns_its_key_group(provider):
    RECORD.clear()
    c = conf(provider)
    sentences = SENTENCES * 8
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("own", c, build(sentences, counters=3))
        run_until(cluster, "own", len(sentences))
        cluster.advance_time(1, increment=0.1)
        cluster.kill_topology("own")
    seen = RECORD["kg.owner"]
    assert seen and all(key_owner(w, n, K) == i for i, n, w in seen)
    state = state_by_namespace(c, "own")
    assert {k: v for k, (_, v) in state.items()} == expected(sentences)
    # each key is in its key group's namespace, never in a task's
    assert all(ns == group_namespace("own/count", key_group(k, K)) for k, (ns, _) in state.items())


def test_a_word_count_rebalanced_4_12_4_past_its_task_count_keeps_exact_counts(provider):
    RECORD.clear()
    c = conf(provider, **{"topology.tasks": 4})  # 4 tasks per component at submit
    first = SENTENCES * 6
    name = "re4"
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(name, c, build(first))
        run_until(cluster, name, len(first))
        # a worker count change makes it a restart (the live move of key groups is
        # tests/integration/test_live_rescale_keyed.py)
        for rounds, n, workers in ((2, 12, 3), (3, 4, 2)):
            cluster.rebalance(name, num_workers=workers, parallelism={"count": n})
            assert cluster.get_topology_info(name)["rescale"]["live"] is False
            assert len(cluster.get_topology_info(name)["components"]["count"]["tasks"]) == n
            run_until(cluster, name, rounds * len(first))  # the restarted spouts emit again
            cluster.advance_time(1, increment=0.1)
        cluster.kill_topology(name)
    counts = Counter({k: v for k, (_, v) in state_by_namespace(c, name).items()})
    want = expected(first * 3)
    assert set(counts) == set(want) and all(counts[w] >= want[w] for w in want)  # at-least-once
    if not RECORD["spout.failed"]:
        assert counts == want
    assert {n for _, n, _ in RECORD["kg.owner"]} == {4, 12}
    assert all(key_owner(w, n, K) == i for i, n, w in RECORD["kg.owner"])
    # moved by key group: every key in its key group's namespace, none copied between tasks
    for key, (ns, _) in state_by_namespace(c, name).items():
        assert ns == group_namespace(f"{name}/count", key_group(key, K))


def test_a_rebalance_above_the_key_groups_is_refused():
    c = conf(None, **{"topology.key.groups": 8})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("cap", c, build(SENTENCES, counters=2))
        with pytest.raises(InvalidTopologyError) as e:
            cluster.rebalance("cap", parallelism={"count": 9})
        assert "'count' would have 9 tasks, more than its 8 key groups" in str(e.value)
        assert "\n" not in str(e.value)
        cluster.rebalance("cap", parallelism={"count": 8})  # up to K
        assert len(cluster.get_topology_info("cap")["components"]["count"]["tasks"]) == 8
        cluster.kill_topology("cap")


def test_a_changed_key_group_count_is_refused_over_existing_state(provider):
    RECORD.clear()
    c = conf(provider)
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("kch", c, build(SENTENCES, counters=2))
        run_until(cluster, "kch", len(SENTENCES))
        cluster.advance_time(1, increment=0.1)
        cluster.kill_topology("kch")
    before = state_by_namespace(c, "kch")
    RECORD.clear()
    changed = conf(provider, **{"topology.key.groups": 128})
    with simulated_time(start=3600.0), LocalCluster() as cluster:
        cluster.submit_topology("kch", changed, build(SENTENCES, counters=2))
        cluster.advance_time(3, increment=0.1)
        errors = [e["message"] for e in cluster.get_topology_info("kch")["errors"]]
        cluster.kill_topology("kch")
    assert any(m.startswith("KeyGroupsChangedError: topology.key.groups of topology 'kch' is 128, "
                            "but the state of 'count' is kept in 4096 key groups") for m in errors), errors
    assert all("\n" not in m for m in errors)
    assert RECORD["stateful.commit"] == []  # nothing counted into a state it cannot read
    assert state_by_namespace(c, "kch") == before


def test_state_kept_per_task_by_an_earlier_squall_moves_into_key_groups(provider, monkeypatch):
    RECORD.clear()
    c = conf(provider)
    first = SENTENCES * 4
    with monkeypatch.context() as m:  # today's layout: one namespace per task, t/c/i
        m.setattr(stateful, "keyed_component", lambda context, bolt=None: False)
        with simulated_time(), LocalCluster() as cluster:
            cluster.submit_topology("mig", c, build(first, counters=3))
            run_until(cluster, "mig", len(first))
            cluster.advance_time(1, increment=0.1)
            cluster.kill_topology("mig")
    old = Counter({k: v for _, k, v in component_items(load_provider(c), c, "mig", "count")})
    assert old == expected(first)
    assert {ns for ns, _, _ in component_items(load_provider(c), c, "mig", "count")} <= {
        f"mig/count/{i}" for i in range(3)}
    RECORD.clear()
    with simulated_time(start=3600.0), LocalCluster() as cluster:  # this squall: key groups
        cluster.submit_topology("mig", c, build(first, counters=2))
        run_until(cluster, "mig", len(first))
        cluster.advance_time(1, increment=0.1)
        cluster.kill_topology("mig")
    state = state_by_namespace(c, "mig")
    assert Counter({k: v for k, (_, v) in state.items()}) == expected(first * 2)
    assert all(ns == group_namespace("mig/count", key_group(k, K)) for k, (ns, _) in state.items())
    # the old namespaces are left as they were
    provider_ = load_provider(c)
    left = Counter()
    for i in range(3):
        left.update(dict(provider_.new_state(f"mig/count/{i}", c, None)))
    assert left == expected(first)
    assert task_namespace("mig/count", 0) != "mig/count/0"


def test_a_component_whose_first_tasks_are_starting_reads_as_empty_state():
    # its $tasks record can hold K before the task count (open_keyed_state writes K first):
    # a reader then (a test's counting loop on Spark) got "max() arg is an empty sequence"
    from squall.state import memory

    memory.clear()
    c = conf({"topology.state.provider": "squall.state.memory.InMemoryStateProvider"})
    meta = load_provider(c).new_state("starting/count/$tasks", c, None)
    meta.put(stateful.KEY_GROUPS_KEY, K)
    meta.commit(1)
    assert list(component_items(load_provider(c), c, "starting", "count")) == []
