"""A bolt that allocates without bound, for the worker memory limit (tests/spark/test_memory_limit.py).

In a module of its own: it runs in Spark's Python workers, which get it by squall's shipping.
"""

from __future__ import annotations

import os
import time

from squall import Bolt, Config, Fields, TopologyBuilder

CHUNK = 2 << 20  # bytes per allocation (written, so resident)
SAFETY_CAP = 1536 << 20  # where the hog stops growing when nothing stops it (old code): the machine is shared


class HogOnce(Bolt):
    """Relays ``[key, seq]``; the first time any task sees seq ``at`` it allocates without bound
    (until its worker is stopped; past ``SAFETY_CAP`` it only holds what it has)."""

    def __init__(self, out_dir: str, at: int) -> None:
        self.out_dir, self.at = out_dir, at

    def prepare(self, conf, context, collector) -> None:
        self.collector = collector

    def execute(self, tup) -> None:
        marker = os.path.join(self.out_dir, "hogged")
        if tup[1] == self.at and not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write(str(os.getpid()))
            hoard = []
            while True:
                if len(hoard) * CHUNK < SAFETY_CAP:
                    hoard.append(b"x" * CHUNK)
                time.sleep(0.003)
        self.collector.emit(tup.values, anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer) -> None:
        declarer.declare(Fields("key", "seq"))


def hog_topology(out_dir: str, keys: int, count: int, *, ask_mb: float) -> tuple[Config, object]:
    """SequenceSpout -> hog (asks ``ask_mb`` per task) -> SequenceChecker, on 2 workers."""
    from squall.testing.invariants import SequenceChecker, SequenceSpout

    b = TopologyBuilder()
    b.set_spout("seq", SequenceSpout(out_dir, keys=keys, count=count, rate=100), 1)
    b.set_bolt("hog", HogOnce(out_dir, count // 3), 2).shuffle_grouping("seq").set_memory_load(ask_mb)
    b.set_bolt("check", SequenceChecker(out_dir), 2).fields_grouping("hog", Fields("key"))
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(4)
    conf.set_max_spout_pending(50)
    return conf, b.create_topology()
