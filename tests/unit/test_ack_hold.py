"""A plain bolt's acks of one tree in a row reach the ledger as one, with the same outcome.

Inside ``BoltTask.process`` (a plain bolt's loop), ``Task.send_ack`` holds one ack and XORs
the next ack of the same root into it: a split's words queued to one counter are one ledger
update per run, not one per word. XOR is associative, so the ledger ends the same; what must
not change is the order in which the acker sees this task's messages: an emit (a chained
target may ack or fail in place), a fail or a timeout reset sends the held ack first, and
the loop's end sends it before the task yields.
"""

from __future__ import annotations

from typing import Any

import pytest

from squall import BasicBolt, Bolt, Config, Fields, TopologyBuilder
from squall.api.errors import FailedException
from squall.runtime.worker import Worker
from tests.unit.one_worker import SteppedSpout, emit_and_run, open_worker, spout_task

WORDS = 3
ACKED: list[Any] = []
FAILED: list[Any] = []
# what "mid" does with the i-th word of a sentence: ack, fail, emit (anchored, to the
# chained sink that fails it) or nothing
SCRIPT: list[str] = []


class Sentences(SteppedSpout):
    """The stepped spout, its acks and fails recorded."""

    def ack(self, msg_id: Any) -> None:
        ACKED.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        FAILED.append(msg_id)


class Split(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        for i in range(WORDS):
            collector.emit([i])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("i"))


class Mid(Bolt):
    """Acts on each word as ``SCRIPT`` says (a rich bolt: queued, never chained)."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        what = SCRIPT[tup[0]]
        if what == "ack":
            self.collector.ack(tup)
        elif what == "fail":
            self.collector.fail(tup)
        elif what == "emit":
            self.collector.emit([tup[0]], anchors=tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("i"))


class FailingSink(BasicBolt):
    """Chained to ``mid``: fails every input in place, inside mid's emit."""

    def execute(self, tup: Any, collector: Any) -> None:
        raise FailedException("no")

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def _worker() -> Worker:
    builder = TopologyBuilder()
    builder.set_spout("s", Sentences())
    builder.set_bolt("split", Split()).shuffle_grouping("s")
    builder.set_bolt("mid", Mid()).shuffle_grouping("split")
    builder.set_bolt("sink", FailingSink()).shuffle_grouping("mid")
    conf = Config()
    conf.set_num_ackers(1)
    return open_worker(builder, conf, "ackhold")


def _run(script: list[str], sentences: int = 1) -> tuple[Worker, Any]:
    ACKED.clear()
    FAILED.clear()
    SCRIPT[:] = script
    worker = _worker()
    emit_and_run(worker, spout_task(worker), sentences)
    acker = next(t for t in worker.tasks.values() if t.kind == "acker")
    return worker, acker


def test_the_tree_whose_words_are_acked_in_one_call_completes_and_leaves_the_ledger():
    worker, acker = _run(["ack"] * WORDS, sentences=2)
    assert (sorted(ACKED), FAILED) == ([0, 1], [])
    assert len(acker.ledger) == 0
    assert not spout_task(worker).pending


def test_a_run_of_one_trees_acks_in_one_process_call_is_one_ledger_update():
    _, acker = _run(["ack"] * WORDS, sentences=2)
    assert ACKED == [0, 1]
    # per sentence: the spout's init (its chained split's ack is in it) and mid's three
    # acks, held and sent as one
    assert acker.metrics.executed == 2 * 2


def test_a_fail_after_held_acks_of_its_tree_fails_it_and_leaves_no_ledger_entry():
    # held acks sent after the fail would make an entry for a root the acker has dropped
    _, acker = _run(["ack", "ack", "fail"])
    assert (ACKED, FAILED) == ([], [0])
    assert len(acker.ledger) == 0


def test_an_emit_sends_the_held_ack_before_its_chained_target_fails_the_tree():
    # mid acks word 0 (held), then emits word 1 to the chained sink, which fails it in place
    _, acker = _run(["ack", "emit", "none"])
    assert (ACKED, FAILED) == ([], [0])
    assert len(acker.ledger) == 0


@pytest.mark.parametrize("script", [["ack", "none", "ack"], ["none"] * WORDS])
def test_a_tree_with_a_word_never_acked_does_not_complete(script):
    _, acker = _run(script)
    assert (ACKED, FAILED) == ([], [])
    assert len(acker.ledger) == 1
