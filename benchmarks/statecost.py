"""CPU time per sentence of the stateful word count against the dict count, workers in this thread.

    python -m benchmarks.statecost [--workers 2] [--sentences 30000] [--runs 3]
    python -m benchmarks.statecost --timeit

The topology is ``benchmarks.opcodes``' word count (spout -> split -> count, acking on), its
count either a dict (``plain``) or a ``StatefulBolt`` on ``InMemoryStateProvider``
(``memory``), with checkpoints every 100 ms and 10,000 pending per spout task. The workers run
in this thread on simulated time, advanced 1 ms per loop, so the checkpoints come after the
same work in every run and no CPU is spent waiting for one. ``--timeit`` times the counter's
``put(w, get(w, 0) + 1)`` on a state against the same on a dict, with a prepare and commit
every 1,000 words as a checkpoint would.
"""

from __future__ import annotations

import argparse
import time
import timeit
from typing import Any

from benchmarks.opcodes import SENTENCES, Count, CountedSpout, Split
from squall import Config, Fields, StatefulBolt, TopologyBuilder
from squall.runtime import clock as runtime_clock
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker
from squall.state import memory

INTERVAL_MS = 100
PENDING = 10000
WORDS = [w for s in SENTENCES for w in s.split()]


class DictCount(Count):
    """``benchmarks.opcodes``' dict count, declaring the stateful count's fields."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


class StateCount(StatefulBolt):
    """Counts words in the checkpointed state and acks (held until the commit)."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        word = tup[0]
        self.state.put(word, self.state.get(word, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def workers(n: int, sentences: int, variant: str, run: int) -> list[Worker]:
    """The variant's workers, opened, sharing an in-process hub."""
    builder = TopologyBuilder()
    builder.set_spout("s", CountedSpout(sentences))
    builder.set_bolt("split", Split()).shuffle_grouping("s")
    count = DictCount() if variant == "plain" else StateCount()
    builder.set_bolt("count", count, 2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(n)
    conf.set_max_spout_pending(PENDING)
    conf.set_num_ackers(n)
    conf["squall.spout.round.budget.ms"] = 1e9  # rounds bounded by counts, as in opcodes
    conf["squall.transfer.batch.time.ms"] = 1e9
    if variant != "plain":
        conf["topology.state.checkpoint.interval.ms"] = INTERVAL_MS
        conf["topology.state.provider"] = "squall.state.memory.InMemoryStateProvider"
    topology = builder.create_topology()
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    hub = InProcessHub(n, 64)
    ws = [Worker(topology_name=f"statecost{run}", topology=topology, conf=merged, plan=plan,
                 index=i, transport=hub.endpoint(i)) for i in range(n)]
    for w in ws:
        w.open_tasks()
    return ws


def drive(ws: list[Worker], clock: runtime_clock.SimulatedClock) -> int:
    """Run rounds, 1 simulated ms apart, until every sentence is acked; returns the loops."""
    spouts = [s for w in ws for s in w.spouts if s.component == "s"]
    loops = 0
    while True:
        for w in ws:
            w.run_once()
        clock.advance(0.001)
        loops += 1
        if (all(s.spout.i >= s.spout.n for s in spouts) and not any(s.pending for s in spouts)
                and all(w.is_idle() for w in ws)):
            return loops


def cpu_us(n: int, sentences: int, variant: str, run: int) -> float:
    """CPU microseconds per sentence of one run."""
    clock = runtime_clock.SimulatedClock()
    runtime_clock.install(clock)
    try:
        memory.clear()
        ws = workers(n, sentences, variant, run)
        t0 = time.process_time()
        drive(ws, clock)
        spent = time.process_time() - t0
    finally:
        runtime_clock.uninstall(clock)
    return spent / sentences * 1e6


def time_counter(number: int = 200_000) -> tuple[float, float]:
    """Microseconds per ``put(w, get(w, 0) + 1)`` on a memory state and on a dict."""
    state: Any = memory.InMemoryStateProvider().new_state("statecost/timeit", {}, None)
    counts: dict[str, int] = {}
    words = WORDS * (1000 // len(WORDS) + 1)
    words = words[:1000]
    txid = [0]

    def on_state() -> None:
        get, put = state.get, state.put
        for w in words:
            put(w, get(w, 0) + 1)
        txid[0] += 1
        state.prepare_commit(txid[0])
        state.commit(txid[0])

    def on_dict() -> None:
        for w in words:
            counts[w] = counts.get(w, 0) + 1

    reps = max(1, number // len(words))
    s = min(timeit.repeat(on_state, number=reps, repeat=5)) / (reps * len(words))
    d = min(timeit.repeat(on_dict, number=reps, repeat=5)) / (reps * len(words))
    memory.clear()
    return s * 1e6, d * 1e6


def main(argv: list[str] | None = None) -> int:
    """Print CPU-us per sentence for both variants, alternated, or the counter's timeit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=30000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeit", action="store_true")
    args = parser.parse_args(argv)
    if args.timeit:
        for _ in range(args.runs):
            s, d = time_counter()
            print(f"put(w, get(w, 0) + 1): state {s:.3f} us, dict {d:.3f} us, ratio {s / d:.1f}")
        return 0
    run = 0
    for _ in range(args.runs):
        figures = []
        for variant in ("plain", "memory"):
            run += 1
            figures.append(cpu_us(args.workers, args.sentences, variant, run))
        plain, mem = figures
        print(f"CPU-us per sentence: plain {plain:.1f}, memory {mem:.1f}, "
              f"plain/memory {plain / mem:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
