"""Spouts and bolts shared by the integration tests.

They live in an importable module so that cloudpickle pickles them by reference and
their module-level ``RECORD`` is the one the test reads (components run in this process
under LocalCluster).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from squall import BasicBolt, Bolt, Fields, Spout, StatefulBolt
from squall.runtime import clock

RECORD: dict[str, list] = defaultdict(list)
_lock = threading.Lock()


def record(key: str, value: Any) -> None:
    with _lock:
        RECORD[key].append(value)


def reset() -> None:
    with _lock:
        RECORD.clear()


class ListSpout(Spout):
    """Emits ``items`` (split across tasks) with msg ids; replays failures if asked."""

    def __init__(self, items: list[list], fields: tuple[str, ...] = ("value",), replay: bool = True,
                 tag: str = "spout", track: bool = True) -> None:
        self.items = items
        self.fields = fields
        self.replay = replay
        self.tag = tag
        self.track = track

    def open(self, conf, context, collector):
        self.collector = collector
        self.task = context.task_id
        idx, n = context.get_this_task_index(), len(context.get_this_component_tasks())
        self.queue = [i for i in range(len(self.items)) if i % n == idx]
        self.in_flight = 0
        self.max_in_flight = 0
        record(f"{self.tag}.open", self.task)

    def next_tuple(self):
        if self.queue:
            i = self.queue.pop(0)
            self.collector.emit(self.items[i], msg_id=i if self.track else None)
            if self.track:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                record(f"{self.tag}.max_in_flight", self.max_in_flight)

    def ack(self, msg_id):
        self.in_flight -= 1
        record(f"{self.tag}.acked", (self.task, msg_id))

    def fail(self, msg_id):
        self.in_flight -= 1
        record(f"{self.tag}.failed", (self.task, msg_id, clock.monotonic()))
        if self.replay:
            self.queue.append(msg_id)

    def activate(self):
        record(f"{self.tag}.activate", self.task)

    def deactivate(self):
        record(f"{self.tag}.deactivate", self.task)

    def close(self):
        record(f"{self.tag}.close", self.task)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields(*self.fields))


class SplitBolt(BasicBolt):
    def execute(self, tup, collector):
        for word in tup[0].split():
            collector.emit([word])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class CountBolt(Bolt):
    """Counts words per task; records the final counts on cleanup."""

    def __init__(self, tag: str = "count") -> None:
        self.tag = tag

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.task_id
        self.counts: dict[str, int] = {}

    def execute(self, tup):
        word = tup["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        record(f"{self.tag}.seen", (self.task, word))
        self.collector.ack(tup)

    def cleanup(self):
        record(f"{self.tag}.cleanup", (self.task, dict(self.counts)))


class WhoGotIt(BasicBolt):
    """Emits (task id, values) for each input: shows where a grouping sent what."""

    def prepare(self, conf, context):
        self.task = context.task_id

    def execute(self, tup, collector):
        if not tup.is_tick():
            collector.emit([self.task, tup.values])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("task", "values"))


class ForwardBolt(Bolt):
    """Anchors and forwards each input, then acks it."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values, anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


class NeverAckBolt(Bolt):
    """Receives and never acks (for timeouts)."""

    def execute(self, tup):
        record("never.got", tup.values)


class FailBolt(Bolt):
    """Fails every tuple explicitly."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.fail(tup)


class RaiseOnBolt(Bolt):
    """Raises for the value ``bad``; acks the rest."""

    def __init__(self, bad: Any) -> None:
        self.bad = bad

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == self.bad:
            raise RuntimeError(f"cannot handle {self.bad!r}")
        record("raise.ok", tup[0])
        self.collector.ack(tup)


class SlowBolt(Bolt):
    """Sleeps per tuple, then acks."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        time.sleep(self.delay)
        record("slow.done", tup[0])
        self.collector.ack(tup)


class TickBolt(Bolt):
    """Records the time of each tick tuple."""

    def __init__(self, freq: float | None = None) -> None:
        self.freq = freq

    def prepare(self, conf, context, collector):
        self.collector = collector
        record("tick.prepared", clock.monotonic())

    def execute(self, tup):
        if tup.is_tick():
            record("tick.at", clock.monotonic())
            self.collector.ack(tup)  # a no-op for ticks
        else:
            self.collector.ack(tup)

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": self.freq} if self.freq else None


class TypeRecorder(Bolt):
    """Records the values it receives with their worker-crossing types."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        record("types", tup.values[0])
        self.collector.ack(tup)


# ---- stateful ------------------------------------------------------------------------

FAULTS: dict[str, int] = {}  # hook name -> how many more calls raise


def inject(hook: str) -> None:
    with _lock:
        left = FAULTS.get(hook, 0)
        if left:
            FAULTS[hook] = left - 1
    if left:
        record("faults", hook)
        raise RuntimeError(f"injected fault in {hook}")


class StatefulCount(StatefulBolt):
    """Counts words in its KeyValueState; hooks raise when a fault is injected."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.task_id
        self.state = None

    def init_state(self, state):
        record("stateful.init", self.task)
        self.state = state

    def execute(self, tup):
        if tup.is_tick():
            return
        word = tup["word"]
        self.state.put(word, self.state.get(word, 0) + 1)
        self.collector.ack(tup)

    def pre_prepare(self, txid):
        inject("pre_prepare")

    def pre_commit(self, txid):
        inject("pre_commit")
        record("stateful.commit", txid)

    def pre_rollback(self):
        inject("pre_rollback")
        record("stateful.rollback", self.task)
