"""A tuple for another worker above ``LARGE_TUPLE_BYTES`` closes its frame at once.

Small plain tuples wait in their batch for the round's flush; a large one is packed at
emit (to check its size) and sends the peer's frame right away, so a frame never
carries many large tuples. Two workers on an in-process hub, driven in this thread.
"""

from __future__ import annotations

from typing import Any

from squall import BasicBolt, Config, Fields, Spout, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transfer import LARGE_TUPLE_BYTES
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker


class Quiet(Spout):
    """Emits nothing: the test delivers by hand."""

    def next_tuple(self) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("v"))


class Sink(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def two_workers() -> tuple[Worker, Any, int]:
    """Worker 0, its spout task, and the sink's task id on worker 1."""
    b = TopologyBuilder()
    b.set_spout("a_quiet", Quiet())  # tasks by component name: a_quiet on 0, b_sink on 1
    b.set_bolt("b_sink", Sink()).shuffle_grouping("a_quiet")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_num_ackers(0)
    conf["squall.chaining"] = False  # the sink must stay in worker 1: frames are tested
    merged = prepare_conf(conf, b.create_topology())
    topology = prepare_topology(b.create_topology())
    plan = make_plan(topology, merged)
    hub = InProcessHub(2, 64)
    ws = [Worker(topology_name="t", topology=topology, conf=merged, plan=plan, index=i,
                 transport=hub.endpoint(i)) for i in range(2)]
    for w in ws:
        w.open_tasks()
    w0, w1 = ws
    spout = next(t for t in w0.tasks.values() if t.component == "a_quiet")
    sink = next(t for t in w1.tasks.values() if t.component == "b_sink")
    return w0, spout, sink.task_id


def test_a_small_tuple_waits_for_the_flush():
    w0, spout, target = two_workers()
    w0.deliver(target, spout, "default", ["x" * 100], None)
    assert w0.sent_frames == 0


def test_a_large_tuple_sends_its_frame_at_once():
    w0, spout, target = two_workers()
    w0.deliver(target, spout, "default", ["x" * 100], None)
    w0.deliver(target, spout, "default", ["x" * (LARGE_TUPLE_BYTES + 1)], None)
    assert w0.sent_frames == 1 and w0.sent_tuples == 2
