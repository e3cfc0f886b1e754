"""The live rescale's plan and refusals (pure)."""

from squall import Config, Fields, TopologyBuilder
from squall.runtime.live_plan import live_plan, live_refusal, task_changes
from squall.runtime.plan import SYSTEM, make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from tests.integration.components import CountBolt, ListSpout, StatefulCount


def planned(bolt=None, grouping="fields", workers=2):
    b = TopologyBuilder()
    b.set_spout("src", ListSpout([["a"]], fields=("word",)), 1)
    d = b.set_bolt("count", bolt or CountBolt(), 2)
    if grouping == "fields":
        d.fields_grouping("src", Fields("word"))
    else:
        d.global_grouping("src")
    c = Config()
    c.set_num_workers(workers)
    topology = b.create_topology()
    conf = prepare_conf(c, topology)
    topology = prepare_topology(topology, conf)
    return topology, conf, make_plan(topology, conf)


def test_new_tasks_get_ids_above_every_id_and_stay_put_tasks_keep_theirs():
    _, _, plan = planned()
    grown = live_plan(plan, {"count": (2, 5)})
    top = max(plan.task_component)
    assert grown.component_tasks["count"] == [1, 2, top + 1, top + 2, top + 3]
    for w in range(plan.num_workers):  # what a worker had it keeps
        assert set(plan.worker_tasks(w)) <= set(grown.worker_tasks(w))
    counts = [sum(1 for t in grown.worker_tasks(w) if t in grown.component_tasks["count"])
              for w in range(2)]
    assert sorted(counts) == [2, 3]  # spread evenly
    shrunk = live_plan(grown, {"count": (5, 1)})
    assert shrunk.component_tasks["count"] == [1]
    assert all(t in shrunk.task_component for t in shrunk.task_worker())


def test_a_new_worker_gets_a_system_task_and_new_tasks():
    _, _, plan = planned()
    grown = live_plan(plan, {"count": (2, 3)}, num_workers=3)
    assert grown.num_workers == 3 and len(grown.component_tasks[SYSTEM]) == 3
    assert grown.component_tasks["count"][2] in grown.worker_tasks(2)


def test_refusals_name_the_cause():
    topology, conf, plan = planned()
    changes = task_changes(plan, {"count": 4})
    assert changes == {"count": (2, 4)}
    assert live_refusal(topology, conf, plan, changes, None) is None
    assert live_refusal(topology, conf, plan, changes, 1) == "fewer workers (2 -> 1) need a restart"
    assert "a spout" in live_refusal(topology, conf, plan, {"src": (1, 2)}, None)
    topology, conf, plan = planned(grouping="global")
    assert live_refusal(topology, conf, plan, changes, None) == (
        "component 'count': global grouping from 'src' (it names tasks, so it does not move live)")
    topology, conf, plan = planned(StatefulCount())
    assert live_refusal(topology, conf, plan, changes, None) is None  # key groups move live
    assert "keeps the worker count" in live_refusal(topology, conf, plan, changes, 3)
    topology, conf, plan = planned(StatefulCount(), grouping="global")
    assert "kept per task" in live_refusal(topology, conf, plan, changes, None)
