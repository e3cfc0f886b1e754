"""Spouts and bolts of the connector tests (importable, so cloudpickle pickles them by reference)."""

from __future__ import annotations

from typing import Any

from squall import Bolt, Fields, ReliableSpout, StatefulBolt
from squall.connectors.reliable import DEAD_LETTER_STREAM
from tests.integration.components import RECORD, record  # noqa: F401 - RECORD is re-exported


class NumberSpout(ReliableSpout):
    """Messages 0..n-1 (msg id = the number), split across tasks; records what is done."""

    retry_backoff_secs = 0.0

    def __init__(self, n: int, **policy: Any) -> None:
        self.n = n
        for name, value in policy.items():  # max_retries, retry_backoff_secs, ...
            setattr(self, name, value)

    def open(self, conf, context, collector):
        idx, k = context.get_this_task_index(), len(context.get_this_component_tasks())
        self.todo = [i for i in range(self.n) if i % k == idx]

    def next_message(self):
        if not self.todo:
            return None
        i = self.todo.pop(0)
        record("source.read", i)
        return i, [i]

    def on_done(self, msg_id):
        record("source.done", msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class DefaultLimitSpout(NumberSpout):
    """No max_retries of its own: squall.spout.max.retries applies."""

    def __init__(self, n: int) -> None:
        self.n = n


class Poison(Bolt):
    """Acks every number but ``bad``, which it fails (``how`` = "raise", "fail" or "hold")."""

    def __init__(self, bad: int, how: str = "raise") -> None:
        self.bad, self.how = bad, how

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        n = tup["n"]
        if n == self.bad:
            record("poison.seen", n)
            if self.how == "raise":
                raise ValueError(f"cannot handle {n}")
            if self.how == "fail":
                self.collector.fail(tup)
            return  # "hold": never acked, so it times out
        record("poison.ok", n)
        self.collector.ack(tup)


class DeadLetterSink(Bolt):
    """Records dead letters; fails the first ``fail_first`` of them."""

    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.failed = 0

    def execute(self, tup):
        assert tup.stream == DEAD_LETTER_STREAM
        if self.failed < self.fail_first:
            self.failed += 1
            record("letters.failed", tup["msg_id"])
            self.collector.fail(tup)
            return
        record("letters", dict(zip(tup.fields, tup.values, strict=True)))
        self.collector.ack(tup)


class Upper(Bolt):
    """[n, text] -> [n, TEXT], anchored; holds (never acks) entries whose n is in ``hold``,
    raises on ``bad``; sleeps ``delay`` per tuple so kills land mid-run."""

    def __init__(self, hold: frozenset = frozenset(), bad: str | None = None, delay: float = 0.0) -> None:
        self.hold, self.bad, self.delay = hold, bad, delay

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        n, text = tup["n"], tup["text"]
        if self.delay:
            import time

            time.sleep(self.delay)
        if n == self.bad:
            raise ValueError(f"bad entry {n}")
        if int(n) in self.hold:
            record("upper.held", int(n))
            return
        self.collector.emit([n, text.upper()], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n", "text"))


class LineSink(Bolt):
    """Appends each line to ``<out>/<task>.txt`` (flushed before the ack); holds lines in ``hold``.

    A durable sink for tests whose topology process is killed: what it acked is on disk.
    """

    def __init__(self, out: str, hold: frozenset = frozenset(), delay: float = 0.0) -> None:
        self.out, self.hold, self.delay = out, hold, delay

    def prepare(self, conf, context, collector):
        import os

        self.collector = collector
        os.makedirs(self.out, exist_ok=True)
        self.f = open(os.path.join(self.out, f"{context.task_id}.txt"), "a", encoding="utf-8")  # noqa: SIM115

    def execute(self, tup):
        line = tup["line"]
        if self.delay:
            import time

            time.sleep(self.delay)
        if line in self.hold:
            record("sink.held", line)
            return
        self.f.write(line + "\n")
        self.f.flush()
        record("sink", line)
        self.collector.ack(tup)

    def cleanup(self):
        self.f.close()


class SplitWords(Bolt):
    """[id, sentence] -> [id, pos, word] per word, anchored; holds the ids in ``hold``,
    raises on ``bad``; records every id it sees; sleeps ``delay`` per sentence."""

    def __init__(self, hold: frozenset = frozenset(), bad: int | None = None,
                 delay: float = 0.0) -> None:
        self.hold, self.bad, self.delay = hold, bad, delay

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        sid = tup["id"]
        if self.delay:
            import time

            time.sleep(self.delay)
        record("split.seen", sid)
        if sid in self.hold:
            return
        if sid == self.bad:
            raise ValueError(f"cannot split {sid}")
        for pos, word in enumerate(tup["sentence"].split()):
            self.collector.emit([sid, pos, word], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "pos", "word"))


class SentenceTally(StatefulBolt):
    """A stateful bolt (so the topology has checkpoints): counts sentences in its state.

    ``fail_prepare_after``: the first ``pre_prepare`` once that many sentences were seen
    raises, once per process (the checkpoint fails and every stateful bolt rolls back).
    """

    def __init__(self, fail_prepare_after: int | None = None) -> None:
        self.fail_prepare_after = fail_prepare_after

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen = 0

    def init_state(self, state):
        self.state = state

    def execute(self, tup):
        self.seen += 1
        self.state.put("sentences", (self.state.get("sentences") or 0) + 1)
        self.collector.ack(tup)

    def pre_prepare(self, txid):
        limit = self.fail_prepare_after
        if limit is not None and self.seen >= limit and not RECORD["tally.failed"]:
            record("tally.failed", txid)
            raise RuntimeError(f"prepare of transaction {txid} fails on purpose")

    def pre_rollback(self):
        record("tally.rollback", self.seen)
