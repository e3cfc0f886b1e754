"""storm-starter's ExclamationTopology: words get "!!!" appended, twice.

    word (TestWordSpout) --shuffle--> exclaim1 (ExclamationBolt) --shuffle--> exclaim2

Run it with ``python -m examples.exclamation`` (or ``python examples/exclamation.py``);
``exclaim2`` prints the first few tuples each of its tasks produces, and the program prints
the components' counters when it stops.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from squall import Bolt, Config, Fields, LocalCluster, Spout, TopologyBuilder

TOPOLOGY_NAME = "exclamation"

# the words of Storm's TestWordSpout
WORDS = ["nathan", "mike", "jackson", "golda", "bertels"]


class TestWordSpout(Spout):
    """Emits a random word every ``interval_s`` seconds (Storm's TestWordSpout: 100 ms).

    Storm's spout sleeps in ``nextTuple``; a squall worker runs all of its tasks on one
    thread, so this one returns without emitting until the interval has passed instead.
    """

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, interval_s: float = 0.1) -> None:
        self.interval_s = interval_s

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        self._next_at = 0.0

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now < self._next_at:
            return
        self._next_at = now + self.interval_s
        self._collector.emit([random.choice(WORDS)])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class ExclamationBolt(Bolt):
    """Appends "!!!" to the word, anchored to its input, and acks the input.

    With ``echo`` it also prints its first ``echo`` outputs (per task).
    """

    def __init__(self, echo: int = 0) -> None:
        self.echo = echo

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        self._label = f"{context.component_id}[task {context.task_id}]"
        self._printed = 0

    def execute(self, tup: Any) -> None:
        word = tup[0] + "!!!"
        self._collector.emit([word], anchors=tup)
        self._collector.ack(tup)
        if self._printed < self.echo:
            self._printed += 1
            print(f"{self._label}: {word}", flush=True)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


def build_topology(*, echo: int = 5, interval_s: float = 0.1, spouts: int = 10) -> Any:
    """The exclamation topology; parallelism as storm-starter's (10, 3, 2) by default.

    ``exclaim2`` prints its first ``echo`` tuples per task; ``interval_s`` is the time
    between two words of one spout task.
    """
    builder = TopologyBuilder()
    builder.set_spout("word", TestWordSpout(interval_s), parallelism=spouts)
    builder.set_bolt("exclaim1", ExclamationBolt(), parallelism=3).shuffle_grouping("word")
    builder.set_bolt("exclaim2", ExclamationBolt(echo=echo), parallelism=2).shuffle_grouping("exclaim1")
    return builder.create_topology()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="how long to run (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="worker threads (default 2)")
    parser.add_argument("--echo", type=int, default=5,
                        help="tuples each exclaim2 task prints (default 5)")
    args = parser.parse_args(argv)

    conf = Config()
    conf.set_num_workers(args.workers)
    conf.set_debug(False)
    with LocalCluster() as cluster:
        cluster.submit_topology(TOPOLOGY_NAME, conf, build_topology(echo=args.echo))
        time.sleep(args.seconds)
        info = cluster.get_topology_info(TOPOLOGY_NAME)
        cluster.kill_topology(TOPOLOGY_NAME)
    print(f"after {args.seconds:.1f}s:")
    for name, comp in info["components"].items():
        print(f"  {name:<9} tasks {comp['tasks']}: emitted {comp['emitted']}, "
              f"acked {comp['acked']}, failed {comp['failed']}")
    print("  (TestWordSpout emits without message ids, as Storm's does, so nothing is acked at the spout)")
    for error in info["errors"][:5]:
        print(f"error in {error['component']} task {error['task']}: {error['message']}")
    return 1 if info["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
