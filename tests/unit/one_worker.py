"""One worker driven by hand, round by round, for tests of the hot path's hops.

A test builds its topology, opens it as worker 0 of 1 on an in-process hub
(``open_worker``), lets the ``SteppedSpout`` emit as many tuples as it allows, and runs the
rounds that take them through (``emit_and_run``).
"""

from __future__ import annotations

from typing import Any

from squall import Config, Fields, Spout, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker


class SteppedSpout(Spout):
    """Emits ``[i]`` with message id ``i`` on field ``n``, only as many as ``todo`` allows."""

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector, self.i, self.todo = collector, 0, 0

    def next_tuple(self) -> None:
        if self.todo:
            self.todo -= 1
            self.collector.emit([self.i], msg_id=self.i)
            self.i += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))


def open_worker(builder: TopologyBuilder, conf: Config, name: str) -> Worker:
    """The topology as worker 0 of 1 on an in-process hub, its tasks open."""
    conf.set_num_workers(1)
    topology = builder.create_topology()
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    worker = Worker(topology_name=name, topology=topology, conf=merged, plan=plan, index=0,
                    transport=InProcessHub(1, 64).endpoint(0))
    worker.open_tasks()
    return worker


def spout_task(worker: Worker, component: str = "s") -> Any:
    """The worker's task of spout ``component``."""
    return next(t for t in worker.spouts if t.component == component)


def emit_and_run(worker: Worker, spout: Any, tuples: int = 1, rounds: int = 20) -> None:
    """Let the spout task emit ``tuples`` tuples, and run ``rounds`` rounds to take them through."""
    spout.spout.todo = tuples
    for _ in range(rounds):
        spout.idle_until, spout.idle_streak = 0.0, 0  # no progressive wait from the last round
        worker.run_once()
