"""The fields a delivered tuple carries are its source's ``out_fields`` of today, hop by hop.

The hosts' ``deliver1`` keep the last (stream, fields) a source task looked up (a C fast
path): a source whose ``out_fields`` is replaced (a live rescale rewires its tasks) must
deliver the new fields at once, chained (``ChainHost``) or queued (``Transfer``).
"""

from __future__ import annotations

from typing import Any

import pytest

from squall import BasicBolt, Config, Fields, TopologyBuilder
from squall.runtime.worker import Worker
from tests.unit.one_worker import SteppedSpout, emit_and_run, open_worker, spout_task

SEEN: list[tuple[str, ...]] = []


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
    builder.set_spout("s", SteppedSpout())
    builder.set_bolt("pass", Pass()).shuffle_grouping("s")
    builder.set_bolt("rec", Record()).shuffle_grouping("pass")
    conf = Config()
    conf["squall.chaining"] = chaining
    return open_worker(builder, conf, "fields")


@pytest.mark.parametrize("chaining", [True, False], ids=["chained", "queued"])
def test_a_source_whose_out_fields_are_replaced_delivers_the_new_fields(chaining):
    SEEN.clear()
    worker = _worker(chaining)
    spout = spout_task(worker)
    emit_and_run(worker, spout)  # one tuple through pass -> rec, with the declared fields
    assert SEEN == [("v",)]
    source = next(t for t in worker.tasks.values() if t.component == "pass")
    source.out_fields = {**source.out_fields, "default": Fields("w")}
    emit_and_run(worker, spout)
    assert SEEN == [("v",), ("w",)]
