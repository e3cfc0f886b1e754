"""The Python work Storm's API asks per sentence, before any engine cost: a lower bound.

``python -m benchmarks.floor`` drives the benchmark's own spout and bolts
(``benchmarks/workloads/components.py``) by hand, in one thread, with a collector that only
keeps what is emitted: no tuples, routing, queues, acker or transfer. What is left is what
any engine running these components through Storm's API pays per sentence: a ``next_tuple``
call per message, an ``execute`` call and an ``emit`` per tuple per hop, the spout's
``ack``. Beside it, the steps alone (the functions a dataflow engine such as Bytewax calls
per item, its source handing over batches): the gap between the two is the API's own cost.

Run as the ``floor`` system of ``python -m benchmarks`` (a SPEC argument, ``run_case``), it
gives a row per workload whose sentences/s is that ceiling, beside the engines'.

Printed per workload: microseconds of one core per sentence, and the sentences per second
that ``--cores`` cores could reach at that cost with a free engine (perfect scaling).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks.peers._common import PIPELINE_STEPS, SENTENCES, split

# seconds of this process's CPU: the floor is microseconds of one core, and a process that
# shares the core meanwhile (a cluster of the previous case still stopping) would lengthen
# the wall time of every run of the best-of-N (a quick run once measured the pipeline's
# ceiling at 472k/s, half its usual)
CPU_CLOCK = time.process_time


class NullCollector:
    """Keeps the last batch of emitted values; counts emits (what the drivers check); acks nothing.

    Also the free engine of ``benchmarks.opcodes --floor``.
    """

    __slots__ = ("out", "emits")

    def __init__(self) -> None:
        self.out: list[list] = []
        self.emits = 0

    def emit(self, values: list, *args: Any, **kwargs: Any) -> list[int]:
        self.out.append(values)
        self.emits += 1
        return []

    def ack(self, tup: Any) -> None:
        pass

    def take(self) -> list[list]:
        out, self.out = self.out, []
        return out


class _Context:
    """What the benchmark's components read from a ``TopologyContext``."""

    task_id = 1

    def get_this_component_tasks(self) -> list[int]:
        return [1]


def _spout(probe_dir: str, collector: NullCollector) -> Any:
    from benchmarks.workloads.components import SentenceSpout

    spout = SentenceSpout(probe_dir)
    spout.open({"topology.acker.executors": 1}, _Context(), collector)
    return spout


def pipeline_api(n: int, probe_dir: str) -> tuple[float, int]:
    """Seconds for ``n`` pipeline sentences through the API's calls; emits made."""
    from benchmarks.workloads.components import MapStep

    collector = NullCollector()
    spout = _spout(probe_dir, collector)
    maps = [MapStep(step, probe_dir if i == len(PIPELINE_STEPS) - 1 else None)
            for i, step in enumerate(PIPELINE_STEPS)]
    for m in maps:
        m.prepare({}, _Context())
    t0 = CPU_CLOCK()
    run_pipeline(spout, maps, collector, n)
    return CPU_CLOCK() - t0, collector.emits


def run_pipeline(spout: Any, maps: list, collector: NullCollector, n: int) -> None:
    """``n`` sentences from ``spout`` through ``maps`` in turn, each acked: the API's calls alone."""
    take = collector.take
    for msg_id in range(n):
        spout.next_tuple()
        values = take()[0]
        for m in maps:
            m.execute(values, collector)
            values = take()[0]
        spout.ack(msg_id)


def wordcount_api(n: int, probe_dir: str) -> tuple[float, int]:
    """Seconds for ``n`` word-count sentences through the API's calls; emits made."""
    from benchmarks.workloads.components import SplitSentence, WordCount

    collector = NullCollector()
    spout = _spout(probe_dir, collector)
    splitter = SplitSentence()
    counter = WordCount(probe_dir)
    counter.prepare({}, _Context())
    take = collector.take
    t0 = CPU_CLOCK()
    for msg_id in range(n):
        spout.next_tuple()
        splitter.execute(take()[0], collector)
        for word in take():
            counter.execute(word, collector)
        take()
        spout.ack(msg_id)
    return CPU_CLOCK() - t0, collector.emits


def pipeline_steps(n: int) -> float:
    """Seconds for ``n`` sentences through the three map steps alone."""
    f1, f2, f3 = PIPELINE_STEPS
    t0 = CPU_CLOCK()
    for i in range(n):
        f3(f2(f1(SENTENCES[i % 5])))
    return CPU_CLOCK() - t0


def wordcount_steps(n: int) -> float:
    """Seconds for ``n`` sentences split and counted in a dict, nothing else."""
    counts: dict[str, int] = {}
    t0 = CPU_CLOCK()
    for i in range(n):
        for word in split(SENTENCES[i % 5]):
            counts[word] = counts.get(word, 0) + 1
    return CPU_CLOCK() - t0


def best_us(run: Callable[[], float], n: int, repeat: int) -> float:
    """The best of ``repeat`` runs, in microseconds per sentence."""
    return min(run() for _ in range(repeat)) / n * 1e6


def run_case(case: dict) -> dict[str, Any]:
    """A ``python -m benchmarks`` case of the ``floor`` system: its workload's ceiling.

    ``throughput_tps`` is the sentences per second the case's workers (one core each) reach
    with the API calls alone (the best of ``REPEAT`` runs of ``CASE_SENTENCES``), so a
    system's ratio to this row is the share of its ceiling it reaches.
    """
    from benchmarks.peers._common import base_row, versions
    from benchmarks.peers._measure import sink_units_per_sentence

    api, steps = {"pipeline": (pipeline_api, pipeline_steps),
                  "wordcount": (wordcount_api, wordcount_steps)}[case["workload"]]
    n, cores = CASE_SENTENCES, case["workers"]
    with tempfile.TemporaryDirectory(prefix="squall-floor-") as probe:
        us = best_us(lambda: api(n, probe)[0], n, REPEAT)
    alone = best_us(lambda: steps(n), n, REPEAT)
    row = base_row(case, "floor")
    tps = cores * 1e6 / us
    units = sink_units_per_sentence(case["workload"])
    row.update({"throughput_tps": tps, "words_per_s": tps * units if units != 1.0 else None,
                "us_per_sentence": round(us, 3), "steps_alone_us": round(alone, 3),
                "steps_alone_tps": round(cores * 1e6 / alone),
                "delivery": f"none: Storm's API calls (ack included) with a free engine, on {cores} cores",
                "versions": versions()})
    return row


CASE_SENTENCES = 100_000
REPEAT = 5


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0].startswith("{"):  # a SPEC: run as the ``floor`` system of python -m benchmarks
        from benchmarks.peers._common import serve

        return serve("floor", run_case, argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is kept")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    if args.sentences < 1 or args.repeat < 1 or args.cores < 1:
        parser.error("--sentences, --repeat and --cores must be at least 1")
    n, repeat = args.sentences, args.repeat
    with tempfile.TemporaryDirectory(prefix="squall-floor-") as probe:
        rows = [
            ("pipeline", "API calls, free engine", best_us(lambda: pipeline_api(n, probe)[0], n, repeat)),
            ("pipeline", "the steps alone", best_us(lambda: pipeline_steps(n), n, repeat)),
            ("wordcount", "API calls, free engine", best_us(lambda: wordcount_api(n, probe)[0], n, repeat)),
            ("wordcount", "the steps alone", best_us(lambda: wordcount_steps(n), n, repeat)),
        ]
    print(f"{'workload':<10} {'what runs':<24} {'us/sentence':>11} {f'ceiling on {args.cores} cores /s':>24}")
    for workload, what, us in rows:
        print(f"{workload:<10} {what:<24} {us:>11.3f} {args.cores * 1e6 / us:>24,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
