"""Python opcodes, CPU instructions and CPU time per word-count sentence, workers driven in this thread.

    python -m benchmarks.opcodes [--workers 2] [--sentences 2000]
    python -m benchmarks.opcodes --instructions [--workers 2]

The opcode count (``sys.settrace`` opcode events) is the same on every run, so it measures a
change to the hot path even on a busy machine, where wall and CPU times move by 20% or more.
It counts Python-level work only: time spent in C (msgpack, dict and deque operations, and
the whole hot path when it runs compiled) is not in it. ``--instructions`` counts machine
instructions instead, with valgrind's callgrind (about a minute): the difference between
runs of 1,000 and 3,000 sentences, so start-up cancels out. It is as repeatable as the
opcode count and sees compiled code too; compare builds with ``SQUALL_PURE_PYTHON=1``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from typing import Any

from squall import BasicBolt, Bolt, Config, Fields, Spout, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker

SENTENCES = ["the cow jumped over the moon", "an apple a day keeps the doctor away",
             "four score and seven years ago", "snow white and the seven dwarfs",
             "i am at two with nature"]


class CountedSpout(Spout):
    """Emits ``n`` sentences with message ids."""

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector, self.i = collector, 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.collector.emit([SENTENCES[self.i % 5]], msg_id=self.i)
            self.i += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("sentence"))


class Split(BasicBolt):
    """Splits a sentence into words."""

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup[0].split():
            collector.emit([word])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class Count(Bolt):
    """Counts words and acks."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector, self.counts = collector, {}

    def execute(self, tup: Any) -> None:
        word = tup[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.ack(tup)


def workers(n: int, sentences: int, acking: bool) -> list[Worker]:
    """The word count's workers, opened, sharing an in-process hub."""
    builder = TopologyBuilder()
    builder.set_spout("s", CountedSpout(sentences))
    builder.set_bolt("split", Split()).shuffle_grouping("s")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(n)
    conf.set_max_spout_pending(500)
    conf.set_num_ackers(n if acking else 0)
    topology = builder.create_topology()
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    hub = InProcessHub(n, 64)
    ws = [Worker(topology_name="opcodes", topology=topology, conf=merged, plan=plan, index=i,
                 transport=hub.endpoint(i)) for i in range(n)]
    for w in ws:
        w.open_tasks()
    return ws


def drive(ws: list[Worker], sentences: int) -> None:
    """Run rounds until every sentence is emitted and completed."""
    spout = next(s for w in ws for s in w.spouts if s.component == "s")
    while True:
        for w in ws:
            w.run_once()
        if spout.spout.i >= sentences and not spout.pending and all(w.is_idle() for w in ws):
            return


def opcodes(n: int, sentences: int, acking: bool) -> tuple[float, Counter]:
    """Opcodes per sentence, and per (file, function)."""
    ws = workers(n, sentences, acking)
    per: Counter = Counter()

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "opcode":
            code = frame.f_code
            per[(code.co_filename.rsplit("/", 1)[-1], code.co_name)] += 1
        return local

    def enter(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        return local

    sys.settrace(enter)
    try:
        drive(ws, sentences)
    finally:
        sys.settrace(None)
    return sum(per.values()) / sentences, per


def cpu_us(n: int, sentences: int, acking: bool, runs: int = 5) -> float:
    """Best CPU microseconds per sentence over ``runs`` untraced runs."""
    best = float("inf")
    for _ in range(runs):
        ws = workers(n, sentences, acking)
        t0 = time.process_time()
        drive(ws, sentences)
        best = min(best, time.process_time() - t0)
    return best / sentences * 1e6


def _drive_once(n: int, sentences: int, acking: bool) -> None:
    warm = workers(n, 200, acking)  # imports and first-call caches, outside the difference
    drive(warm, 200)
    ws = workers(n, sentences, acking)
    drive(ws, sentences)


def _instructions(n: int, sentences: int, acking: bool) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         "-m", "benchmarks.opcodes", "--drive", str(n), str(sentences), "on" if acking else "off"],
        capture_output=True, text=True, check=True,
    )
    match = re.search(r"Collected : (\d+)", out.stderr)
    if match is None:
        raise SystemExit(f"callgrind printed no total: {out.stderr[-500:]}")
    return int(match.group(1))


def instructions_per_sentence(n: int, acking: bool) -> float:
    """Machine instructions per sentence: callgrind totals at 3,000 and 1,000 sentences."""
    return (_instructions(n, 3000, acking) - _instructions(n, 1000, acking)) / 2000


def main(argv: list[str] | None = None) -> int:
    """Print opcodes and CPU time (or instructions) per sentence, ackers on and off."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--top", type=int, default=12, help="functions to list (ackers on)")
    parser.add_argument("--instructions", action="store_true",
                        help="count machine instructions with valgrind instead")
    parser.add_argument("--drive", nargs=3, metavar=("WORKERS", "SENTENCES", "ACKING"),
                        help=argparse.SUPPRESS)  # one run, for --instructions
    args = parser.parse_args(argv)
    if args.drive:
        _drive_once(int(args.drive[0]), int(args.drive[1]), args.drive[2] == "on")
        return 0
    from squall import _speedups

    print(f"hot path: {_speedups.STATE}")
    if args.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
        for acking in (True, False):
            ir = instructions_per_sentence(args.workers, acking)
            print(f"ackers {'on ' if acking else 'off'}: {ir:,.0f} instructions/sentence "
                  f"({args.workers} worker(s))")
        return 0
    for acking in (True, False):
        ops, per = opcodes(args.workers, args.sentences, acking)
        cpu = cpu_us(args.workers, args.sentences * 3, acking)
        print(f"ackers {'on ' if acking else 'off'}: {ops:,.0f} opcodes/sentence, "
              f"{cpu:.1f} CPU-us/sentence ({args.workers} worker(s))")
        if acking:
            for (path, name), count in per.most_common(args.top):
                print(f"    {count / args.sentences:7,.0f}  {path}:{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
