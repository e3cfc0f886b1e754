"""Task plan (squall/runtime/plan.py) and the contexts built on it (squall/api/context.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from squall.api.builder import TopologyBuilder
from squall.api.components import Bolt, GlobalStreamId, Spout
from squall.api.context import TopologyContext, WorkerTopologyContext
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.runtime.plan import ACKER, SYSTEM, make_plan, num_ackers, split_tasks


class WordSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))
        declarer.declare(Fields("error"), stream="errors")


class CountBolt(Bolt):
    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


def topology():
    b = TopologyBuilder()
    b.set_spout("spout", WordSpout())
    b.set_bolt("split", CountBolt(), parallelism=2).set_num_tasks(5).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), parallelism=3).fields_grouping("split", Fields("word"))
    return b.create_topology()


def test_task_ids_contiguous_per_component_sorted_by_id_from_1():
    plan = make_plan(topology(), {})
    assert plan.component_tasks["count"] == [1, 2, 3]
    assert plan.component_tasks["split"] == [4, 5, 6, 7, 8]
    assert plan.component_tasks["spout"] == [9]


def test_system_components_come_last():
    plan = make_plan(topology(), {"topology.workers": 2})
    assert plan.component_tasks[ACKER] == [10, 11]
    assert plan.component_tasks[SYSTEM] == [12, 13]
    assert plan.acker_tasks == [10, 11]
    assert sorted(plan.task_component) == list(range(1, 14))


def test_plan_is_deterministic():
    a = make_plan(topology(), {"topology.workers": 3})
    b = make_plan(topology(), {"topology.workers": 3})
    assert a.component_tasks == b.component_tasks
    assert a.worker_executors == b.worker_executors


def test_num_tasks_spread_evenly_over_executors():
    plan = make_plan(topology(), {})
    split = [ex.tasks for ex in plan.executors if ex.component == "split"]
    assert split == [(4, 5, 6), (7, 8)]
    count = [ex.tasks for ex in plan.executors if ex.component == "count"]
    assert count == [(1,), (2,), (3,)]


@pytest.mark.parametrize("n, k", [(1, 1), (5, 2), (7, 3), (9, 3), (10, 4), (4, 4)])
def test_split_tasks(n, k):
    runs = split_tasks(100, n, k)
    assert len(runs) == k
    assert [t for run in runs for t in run] == list(range(100, 100 + n))
    sizes = [len(r) for r in runs]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_ackers_default_to_one_per_worker(workers):
    plan = make_plan(topology(), {"topology.workers": workers})
    assert len(plan.acker_tasks) == workers
    assert num_ackers({"topology.workers": workers}) == workers


def test_explicit_acker_count():
    plan = make_plan(topology(), {"topology.workers": 2, "topology.acker.executors": 3})
    assert len(plan.acker_tasks) == 3


def test_zero_ackers_means_no_acker_component():
    plan = make_plan(topology(), {"topology.acker.executors": 0})
    assert ACKER not in plan.component_tasks
    assert plan.acker_tasks == []
    assert all(ex.component != ACKER for ex in plan.executors)


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_bad_acker_count_is_refused(bad):
    with pytest.raises(InvalidTopologyError, match="topology.acker.executors"):
        make_plan(topology(), {"topology.acker.executors": bad})


@pytest.mark.parametrize("bad", [0, -2, 1.0, "1", None, False])
def test_bad_worker_count_is_refused(bad):
    with pytest.raises(InvalidTopologyError, match="topology.workers"):
        make_plan(topology(), {"topology.workers": bad})


def test_executors_round_robin_over_workers():
    plan = make_plan(topology(), {"topology.workers": 2})
    placed = [ex for ex in plan.executors if ex.component != SYSTEM]
    for i, ex in enumerate(placed):
        assert ex in plan.worker_executors[i % 2]
    for comp in ("count", "split"):
        per_worker = Counter(w for w, exs in enumerate(plan.worker_executors)
                             for ex in exs if ex.component == comp)
        assert max(per_worker.values()) - min(per_worker.values()) <= 1


def test_each_worker_gets_one_system_task_and_every_task_is_placed_once():
    plan = make_plan(topology(), {"topology.workers": 3})
    for w in range(3):
        system = [ex for ex in plan.worker_executors[w] if ex.component == SYSTEM]
        assert [ex.tasks for ex in system] == [(plan.component_tasks[SYSTEM][w],)]
    placed = [t for w in range(3) for t in plan.worker_tasks(w)]
    assert sorted(placed) == sorted(plan.task_component)
    assert plan.task_worker() == {t: w for w in range(3) for t in plan.worker_tasks(w)}


def test_more_workers_than_executors_leaves_some_without_user_tasks():
    plan = make_plan(topology(), {"topology.workers": 10, "topology.acker.executors": 0})
    assert len(plan.worker_executors) == 10
    assert sum(len(plan.worker_tasks(w)) for w in range(10)) == 9 + 10


def test_streams_are_recorded_per_component():
    plan = make_plan(topology(), {})
    assert set(plan.streams["spout"]) == {"default", "errors"}
    assert plan.streams["count"]["default"].fields == Fields("word", "count")


# ---- contexts --------------------------------------------------------------------------


def test_worker_context():
    plan = make_plan(topology(), {"topology.workers": 2})
    ctx = WorkerTopologyContext("wc", plan, plan.worker_tasks(1), worker_index=1)
    assert ctx.topology_name == "wc"
    assert ctx.worker_tasks == plan.worker_tasks(1)
    assert ctx.get_component_tasks("split") == [4, 5, 6, 7, 8]
    assert ctx.get_component_tasks("nope") == []
    assert ctx.get_component_id(9) == "spout"
    assert ctx.get_component_ids() == sorted(["count", "split", "spout", ACKER, SYSTEM])
    assert ctx.get_component_streams("spout") == ["default", "errors"]
    assert ctx.get_component_output_fields("spout", "errors") == Fields("error")
    # Storm's overload: a GlobalStreamId names both
    assert ctx.get_component_output_fields(GlobalStreamId("spout", "errors")) == Fields("error")
    assert ctx.get_component_output_fields(GlobalStreamId("split", "default")) == Fields("word", "count")


def test_get_component_tasks_returns_a_copy():
    plan = make_plan(topology(), {})
    ctx = WorkerTopologyContext("wc", plan, [])
    ctx.get_component_tasks("count").append(99)
    assert plan.component_tasks["count"] == [1, 2, 3]


def test_undeclared_stream_names_component_and_stream():
    ctx = WorkerTopologyContext("wc", make_plan(topology(), {}), [])
    with pytest.raises(KeyError, match=r"'count'.*'errors'"):
        ctx.get_component_output_fields("count", "errors")


def test_topology_context_knows_its_task():
    plan = make_plan(topology(), {})
    ctx = TopologyContext("wc", plan, plan.worker_tasks(0), task_id=7)
    assert ctx.component_id == "split"
    assert ctx.get_this_component_tasks() == [4, 5, 6, 7, 8]
    assert ctx.get_this_task_index() == 3
    assert ctx.get_this_output_fields() == Fields("word", "count")
    assert ctx.get_task_data("x") is None
    ctx.set_task_data("x", 1)
    assert ctx.get_task_data("x") == 1
