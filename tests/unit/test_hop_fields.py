"""The fields a delivered tuple carries are its source's ``out_fields`` of today, hop by hop.

The hosts' ``deliver1`` keep the last (stream, fields) a source task looked up (a C fast
path): a source whose ``out_fields`` is replaced (a live rescale rewires its tasks) must
deliver the new fields at once, chained (``ChainHost``) or queued (``Transfer``).
"""

from __future__ import annotations

from typing import Any

import pytest

from squall import BasicBolt, Config, Fields, Spout, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker

SEEN: list[tuple[str, ...]] = []


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


class Pass(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("v"))


class Record(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        SEEN.append(tuple(tup.fields))

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def _worker(chaining: bool) -> Worker:
    builder = TopologyBuilder()
    builder.set_spout("s", Numbers())
    builder.set_bolt("pass", Pass()).shuffle_grouping("s")
    builder.set_bolt("rec", Record()).shuffle_grouping("pass")
    conf = Config()
    conf.set_num_workers(1)
    conf["squall.chaining"] = chaining
    topology = builder.create_topology()
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    worker = Worker(topology_name="fields", topology=topology, conf=merged, plan=plan, index=0,
                    transport=InProcessHub(1, 64).endpoint(0))
    worker.open_tasks()
    return worker


def _emit_one(worker: Worker, spout: Any, rounds: int = 20) -> None:
    """Let the spout emit one tuple, and run the rounds that take it to ``rec``."""
    spout.spout.todo = 1
    spout.idle_until, spout.idle_streak = 0.0, 0  # no progressive wait from the last round
    for _ in range(rounds):
        worker.run_once()


@pytest.mark.parametrize("chaining", [True, False], ids=["chained", "queued"])
def test_a_source_whose_out_fields_are_replaced_delivers_the_new_fields(chaining):
    SEEN.clear()
    worker = _worker(chaining)
    spout = next(t for t in worker.spouts if t.component == "s")
    _emit_one(worker, spout)  # one tuple through pass -> rec, with the declared fields
    assert SEEN == [("v",)]
    source = next(t for t in worker.tasks.values() if t.component == "pass")
    source.out_fields = {**source.out_fields, "default": Fields("w")}
    _emit_one(worker, spout)
    assert SEEN == [("v",), ("w",)]
