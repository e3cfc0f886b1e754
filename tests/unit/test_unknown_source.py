"""A batch from a task this worker's plan does not know (``Transfer._take_batch``)."""

from __future__ import annotations

from squall import Config, Fields, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub, InProcessTransport
from squall.runtime.worker import Worker
from tests.integration.components import CountBolt, ListSpout


def one_worker() -> Worker:
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([]), 1)
    b.set_bolt("count", CountBolt(), 1).fields_grouping("spout", Fields("value"))
    merged = prepare_conf(Config(), b.create_topology())
    topology = prepare_topology(b.create_topology())
    plan = make_plan(topology, merged)
    w = Worker(topology_name="t", topology=topology, conf=merged, plan=plan, index=0,
               transport=InProcessTransport(InProcessHub(1, 2), 0))
    w.build()
    return w


def test_a_batch_from_a_task_the_plan_does_not_know_is_dropped_as_misrouted_not_raised():
    # A worker relaunched alone under a new plan can still be sent frames by a task that the
    # live move is removing; it must drop them (their trees replay), not die on a KeyError.
    w = one_worker()
    count = w.plan.component_tasks["count"][0]
    unknown = max(w.plan.task_component) + 100
    taken = w._take_batch([count, unknown, "default", [["a"], ["b"]], None, None],
                          w.tasks, w._sources)
    assert taken == 0
    assert w.misrouted == 2
    assert not w.tasks[count].inbox
