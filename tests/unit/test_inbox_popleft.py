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

from squall import BasicBolt, Bolt, Config, TopologyBuilder
from squall.runtime.worker import Worker
from tests.unit.one_worker import SteppedSpout, emit_and_run, open_worker, spout_task

SEEN: list[int] = []


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
    builder.set_spout("s", SteppedSpout())
    builder.set_bolt("rec", bolt).shuffle_grouping("s")
    conf = Config()
    conf["squall.chaining"] = False  # queued: the tuple waits in rec's inbox
    return open_worker(builder, conf, "inbox")


@pytest.mark.parametrize("bolt", [RecordBasic, RecordRich], ids=["basic", "rich"])
def test_a_task_whose_inbox_is_replaced_takes_tuples_from_the_new_one(bolt):
    SEEN.clear()
    worker = _worker(bolt())
    spout = spout_task(worker)
    emit_and_run(worker, spout)
    assert SEEN == [0]
    rec = next(t for t in worker.tasks.values() if t.component == "rec")
    old = rec.inbox
    rec.inbox = deque()
    emit_and_run(worker, spout)  # the worker's transfer keeps each inbox's append: the old one
    assert SEEN == [0] and len(old) == 1
    rec.inbox.append(old.popleft())
    assert rec.process(10) == 1
    assert SEEN == [0, 1]
    assert not old and not rec.inbox
