"""A task takes its queued tuples from the inbox it has now, whatever deque that is.

Tasks keep their inbox's bound ``popleft`` (``Task.inbox_popleft``, a C fast path when
compiled) for as long as ``inbox`` is the same deque: a task whose inbox is replaced must
take the next tuples from the new one, rich bolt or basic. (The worker's ``Transfer`` keeps
each queued task's ``inbox.append`` too: nothing in squall replaces an inbox today.)
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from squall import BasicBolt, Bolt, Config, Fields, Spout, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker

SEEN: list[int] = []


class Numbers(Spout):
    """Emits one tuple each time the test allows one (``todo``)."""

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector, self.i, self.todo = collector, 0, 0

    def next_tuple(self) -> None:
        if self.todo:
            self.todo -= 1
            self.collector.emit([self.i], msg_id=self.i)
            self.i += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))


class RecordBasic(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        SEEN.append(tup[0])

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class RecordRich(Bolt):
    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        SEEN.append(tup[0])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def _worker(bolt: Bolt | BasicBolt) -> Worker:
    builder = TopologyBuilder()
    builder.set_spout("s", Numbers())
    builder.set_bolt("rec", bolt).shuffle_grouping("s")
    conf = Config()
    conf.set_num_workers(1)
    conf["squall.chaining"] = False  # queued: the tuple waits in rec's inbox
    topology = builder.create_topology()
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    worker = Worker(topology_name="inbox", topology=topology, conf=merged, plan=plan, index=0,
                    transport=InProcessHub(1, 64).endpoint(0))
    worker.open_tasks()
    return worker


def _emit_one(worker: Worker, spout: Any, rounds: int = 20) -> None:
    spout.spout.todo = 1
    spout.idle_until, spout.idle_streak = 0.0, 0  # no progressive wait from the last round
    for _ in range(rounds):
        worker.run_once()


@pytest.mark.parametrize("bolt", [RecordBasic, RecordRich], ids=["basic", "rich"])
def test_a_task_whose_inbox_is_replaced_takes_tuples_from_the_new_one(bolt):
    SEEN.clear()
    worker = _worker(bolt())
    spout = next(t for t in worker.spouts if t.component == "s")
    _emit_one(worker, spout)
    assert SEEN == [0]
    rec = next(t for t in worker.tasks.values() if t.component == "rec")
    old = rec.inbox
    rec.inbox = deque()
    _emit_one(worker, spout)  # the worker's transfer keeps each inbox's append: the old one
    assert SEEN == [0] and len(old) == 1
    rec.inbox.append(old.popleft())
    assert rec.process(10) == 1
    assert SEEN == [0, 1]
    assert not old and not rec.inbox
