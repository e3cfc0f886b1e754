"""The topology of ``test_autoscale_spark``, in a module of its own (shipped to the executors).

``PacedSpout`` emits one word per tuple at the rate written in a file (the test changes
it to step the offered load); ``SlowCount`` spends 2 ms per tuple waiting (a bolt that
calls a database) on its worker's loop, so a second task adds capacity only on the other
worker (the live rescale puts it there: the worker with the fewest count tasks); ``split``
is ten times cheaper. Acked msg ids go to files in
``out_dir`` so the test can check that nothing was lost.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from squall import BasicBolt, Fields, Spout, TopologyBuilder

COST_S = 0.002


class PacedSpout(Spout):
    """Emits ``rate`` tuples per second, ``rate`` read from ``rate_file`` every second."""

    def __init__(self, rate_file: str, out_dir: str) -> None:
        self.rate_file, self.out_dir = rate_file, out_dir

    def open(self, conf, context, collector):
        self.collector = collector
        self.rate = 0.0
        self.read_at = 0.0
        self.started = time.monotonic()
        self.sent = 0
        self.task = context.task_id
        self.acks = open(Path(self.out_dir) / f"acked-{os.getpid()}-{self.task}.txt", "a")  # noqa: SIM115

    def next_tuple(self):
        now = time.monotonic()
        if now >= self.read_at:
            self.read_at = now + 1.0
            rate = float(Path(self.rate_file).read_text() or 0)
            if rate != self.rate:  # a new rate counts from now
                self.rate, self.started, self.sent = rate, now, 0
        if self.sent < (now - self.started) * self.rate:
            self.sent += 1
            self.collector.emit([f"w{self.sent % 17}"], msg_id=f"{self.task}-{os.getpid()}-{now:.6f}")

    def ack(self, msg_id):
        self.acks.write(f"{msg_id}\n")
        self.acks.flush()

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class Cheap(BasicBolt):
    """Passes the word on after 0.2 ms of work: a tenth of the count's cost."""

    def execute(self, tup, collector):
        until = time.perf_counter() + COST_S / 10
        while time.perf_counter() < until:
            pass
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class SlowCount(BasicBolt):
    """Counts words, waiting 2 ms on each."""

    def prepare(self, conf, context):
        self.counts: dict[str, int] = {}

    def execute(self, tup, collector):
        time.sleep(COST_S)
        self.counts[tup[0]] = self.counts.get(tup[0], 0) + 1

    def declare_output_fields(self, declarer):
        pass


def build(rate_file: str, out_dir: str):
    """Spout -> split (cheap) -> count (ten times as costly), count submitted with one task."""
    b = TopologyBuilder()
    b.set_spout("words", PacedSpout(rate_file, out_dir), 1)
    b.set_bolt("split", Cheap(), 1).shuffle_grouping("words")
    b.set_bolt("count", SlowCount(), 1).fields_grouping("split", Fields("word"))
    return b.create_topology()
