"""Python opcodes, CPU instructions and CPU time per word-count sentence, workers driven in this thread.

    python -m benchmarks.opcodes [--workers 2] [--sentences 2000]
    python -m benchmarks.opcodes --instructions [--workers 2] [--workload pipeline] [--floor]

``--workload pipeline`` measures the pipeline workload instead (a spout and three map
bolts, each hop a shuffle, every component with one task per worker, as in the
benchmark): per sentence through the whole chain.

The opcode count (``sys.settrace`` opcode events) is the same on every run, so it measures a
change to the hot path even on a busy machine, where wall and CPU times move by 20% or more.
It counts Python-level work only: time spent in C (msgpack, dict and deque operations, and
the whole hot path when it runs compiled) is not in it. ``--instructions`` counts machine
instructions instead, with valgrind's callgrind (about a minute): the difference between
runs of 1,000 and 3,000 sentences, so start-up cancels out, with ``PYTHONHASHSEED=0``
unless the environment sets another seed (str hashes are salted per process, and the probes
of str-keyed dict lookups moved the count by about 3% between runs). It is as repeatable as
the opcode count and sees compiled code too; compare builds with ``SQUALL_PURE_PYTHON=1``.
``--floor`` also counts the same components driven by hand with a collector that costs
nothing (``drive_free``, as ``benchmarks.floor``): the API's own instructions, so the
engine's are the difference.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
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
        self.collector = collector
        self.counts: dict[str, int] = {}

    def execute(self, tup: Any) -> None:
        word = tup[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.ack(tup)


class MapStep(BasicBolt):
    """One of the pipeline's map steps (the benchmark's ``MapStep``, without its probe)."""

    def __init__(self, step: Any) -> None:
        self.step = step

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([self.step(tup[0])])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("value"))


WORKLOADS = ("wordcount", "pipeline")
CHAINING = True  # squall.chaining of the measured topology (--no-chaining: False)


def workers(n: int, sentences: int, acking: bool, workload: str = "wordcount") -> list[Worker]:
    """The workload's workers, opened, sharing an in-process hub."""
    builder = TopologyBuilder()
    if workload == "pipeline":
        from benchmarks.peers._common import PIPELINE_STEPS

        # as the benchmark: every component one task per worker; the sentences split
        # evenly over the spout tasks
        builder.set_spout("s", CountedSpout(sentences // n), parallelism=n)
        upstream = "s"
        for i, step in enumerate(PIPELINE_STEPS):
            builder.set_bolt(f"map{i + 1}", MapStep(step), parallelism=n).shuffle_grouping(upstream)
            upstream = f"map{i + 1}"
    else:
        builder.set_spout("s", CountedSpout(sentences))
        builder.set_bolt("split", Split()).shuffle_grouping("s")
        builder.set_bolt("count", Count(), 2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(n)
    conf.set_max_spout_pending(500)
    conf.set_num_ackers(n if acking else 0)
    # rounds bounded by counts, not by real time: under valgrind a 5 ms spout budget would
    # cut rounds (and so frames) wherever the machine's load put the clock, and the
    # instruction count would move with it
    conf["squall.spout.round.budget.ms"] = 1e9
    conf["squall.transfer.batch.time.ms"] = 1e9  # the same for the mid-round sends
    conf["squall.chaining"] = CHAINING
    return open_workers(builder.create_topology(), conf, n, "opcodes")


def open_workers(topology: Any, conf: Any, n: int, name: str) -> list[Worker]:
    """``n`` workers of ``topology``, its tasks opened, sharing an in-process hub."""
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    hub = InProcessHub(n, 64)
    ws = [Worker(topology_name=name, topology=topology, conf=merged, plan=plan, index=i,
                 transport=hub.endpoint(i)) for i in range(n)]
    for w in ws:
        w.open_tasks()
    return ws


def drive(ws: list[Worker], sentences: int) -> None:
    """Run rounds until every sentence is emitted and completed."""
    spouts: list[Any] = [s for w in ws for s in w.spouts if s.component == "s"]
    while True:
        for w in ws:
            w.run_once()
        if (all(s.spout.i >= s.spout.n for s in spouts) and not any(s.pending for s in spouts)
                and all(w.is_idle() for w in ws)):
            return


def opcodes(n: int, sentences: int, acking: bool, workload: str = "wordcount") -> tuple[float, Counter]:
    """Opcodes per sentence, and per (file, function)."""
    ws = workers(n, sentences, acking, workload)
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


def cpu_us(n: int, sentences: int, acking: bool, runs: int = 5, workload: str = "wordcount") -> float:
    """Best CPU microseconds per sentence over ``runs`` untraced runs."""
    best = float("inf")
    for _ in range(runs):
        ws = workers(n, sentences, acking, workload)
        t0 = time.process_time()
        drive(ws, sentences)
        best = min(best, time.process_time() - t0)
    return best / sentences * 1e6


def _drive_once(n: int, sentences: int, acking: bool, workload: str = "wordcount") -> None:
    warm = workers(n, 200, acking, workload)  # imports and first-call caches, outside the difference
    drive(warm, 200)
    ws = workers(n, sentences, acking, workload)
    drive(ws, sentences)


def drive_free(sentences: int, workload: str = "wordcount") -> int:
    """The same components driven by hand, with no engine: Storm's API calls alone.

    As ``benchmarks.floor`` (which drives the benchmark's own components), a bolt gets its
    values list as the tuple. Returns the emits made.
    """
    from benchmarks.floor import NullCollector, run_pipeline

    collector = NullCollector()
    spout = CountedSpout(sentences)
    spout.open({}, None, collector)
    take = collector.take
    if workload == "pipeline":
        from benchmarks.peers._common import PIPELINE_STEPS

        run_pipeline(spout, [MapStep(step) for step in PIPELINE_STEPS], collector, sentences)
    else:
        splitter, counter = Split(), Count()
        counter.prepare({}, None, collector)
        for msg_id in range(sentences):
            spout.next_tuple()
            splitter.execute(take()[0], collector)
            for word in take():
                counter.execute(word)
            spout.ack(msg_id)
    return collector.emits


def _drive_free_once(sentences: int, workload: str) -> None:
    drive_free(200, workload)  # first-call caches, outside the difference
    drive_free(sentences, workload)


# Stages of the data path, by the compiled functions (and C libraries) that start them.
# A function that matches no pattern (the interpreter, dict and list operations, malloc,
# the user's Python code) is charged to its callers' stages in proportion to the
# instructions each call cost, so the user's execute counts to "execute" and the dict an
# emit builds to "transfer". Order matters: the first matching pattern wins.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("serialize", ("serialization_", "Encoder", "msgpack", "Packer", "Unpacker", "pickle",
                   "_id_ints", "wire_ids", "u64_array", "u64_bytes")),
    ("ack", ("runtime_5acker_", "runtime_9roottable_", "AckerTask", "LedgerTable", "LedgerDict",
             "OutputCollector_3ack", "OutputCollector_ack", "OutputCollector_4fail",
             "OutputCollector_fail", "send_ack",
             "buffer_ack", "_send_acks", "new_root", "acker_for", "getrandbits",
             "runtime_3ids_", "SplitMix64", "RandomIds", "SpoutTask_handle", "SpoutTask_track",
             "SpoutTask_process", "SpoutTask__acked", "send_init", "Transfer_verdict",
             "rotating_", "RotatingMap", "PendingTable", "PendingDict", "record_complete")),
    ("route", ("_Emitter__route", "_Emitter_route", "runtime_7routing_", "Router",
               "runtime_7hashing_", "stable_hash", "hash_values")),
    ("transfer", ("Transfer_deliver", "Transfer__flush", "Transfer_send", "Transfer_receive",
                  "Transfer__batch_to", "Transfer__added", "Transfer__take_batch", "_Batch",
                  "Round_exchange_now",
                  "_Peer", "transfer__plain", "Transfer__check_values", "transport", "InProcess",
                  "zmq", "Collector__send",
                  "Collector_send", "Collector_emit", "Collector_4emit", "new_tuple")),
    ("spout", ("SpoutTask_next_tuple", "Round_run_spouts")),
    ("execute", ("BoltTask_handle", "BoltTask_process", "Task_process", "_execute_basic",
                 "execute_batch", "_process_batches")),
    ("loop", ("Worker_run_once", "Round_run", "Round_fullest", "Round_gate_spouts", "_wait_time",
              "Round_process", "Timers_fire", "Commands_run")),
]
STAGE_NAMES = [name for name, _ in STAGES] + ["other"]


def _stage_of(name: str) -> str | None:
    for stage, patterns in STAGES:
        if any(p in name for p in patterns):
            return stage
    return None


def parse_callgrind(path: str) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Self instructions per function and inclusive instructions per call edge."""
    selfcost: dict[str, int] = {}
    edges: dict[tuple[str, str], int] = {}
    names: dict[str, str] = {}

    def name(ref: str) -> str:
        ref = ref.strip()
        if ref.startswith("("):
            key, _, rest = ref.partition(")")
            if rest.strip():
                names[key] = rest.strip()
            return names.get(key, ref)
        return ref

    fn = ""
    callee: str | None = None
    after_calls = False
    with open(path) as f:
        for line in f:
            if not line or line[0] == "\n":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                cost = line.split()
                value = int(cost[1]) if len(cost) > 1 else 0
                if after_calls:
                    assert callee is not None
                    edges[(fn, callee)] = edges.get((fn, callee), 0) + value
                    after_calls = False
                else:
                    selfcost[fn] = selfcost.get(fn, 0) + value
            elif line.startswith("fn="):
                fn = name(line[3:])
                selfcost.setdefault(fn, 0)
            elif line.startswith("cfn="):
                callee = name(line[4:])
            elif line.startswith("calls="):
                after_calls = True
    return selfcost, edges


def stage_costs(path: str) -> dict[str, float]:
    """Instructions of one callgrind profile by stage (see ``STAGES``)."""
    selfcost, edges = parse_callgrind(path)
    callers: dict[str, list[tuple[str, int]]] = {}
    for (caller, callee), cost in edges.items():
        if caller != callee and cost > 0:
            callers.setdefault(callee, []).append((caller, cost))
    fixed = {f: _stage_of(f) for f in selfcost}
    dist: dict[str, dict[str, float]] = {
        f: {s: 1.0} if s else {"other": 1.0} for f, s in fixed.items()}
    for _ in range(60):  # to a fixed point through the interpreter's recursion
        for f, s in fixed.items():
            if s is not None or f not in callers:
                continue
            total = sum(cost for _, cost in callers[f])
            mixed: dict[str, float] = {}
            for caller, cost in callers[f]:
                for stage, share in dist.get(caller, {"other": 1.0}).items():
                    mixed[stage] = mixed.get(stage, 0.0) + share * cost / total
            dist[f] = mixed
    out = dict.fromkeys(STAGE_NAMES, 0.0)
    for f, cost in selfcost.items():
        for stage, share in dist[f].items():
            out[stage] += cost * share
    return out


def _instructions(n: int, sentences: int, acking: bool, profile: str = "/dev/null",
                  workload: str = "wordcount", free: bool = False) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}", sys.executable,
         "-m", "benchmarks.opcodes", "--drive", str(n), str(sentences), "on" if acking else "off",
         "--workload", workload, *([] if CHAINING else ["--no-chaining"]),
         *(["--floor"] if free else [])],
        capture_output=True, text=True, check=True,
        # str hashes are salted per process: the probes of every str-keyed dict lookup (module
        # globals, instance dicts) moved a pipeline sentence by about 700 instructions
        # between runs of the same build; a fixed seed makes the count repeatable
        env={**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")},
    )
    match = re.search(r"Collected : (\d+)", out.stderr)
    if match is None:
        raise SystemExit(f"callgrind printed no total: {out.stderr[-500:]}")
    return int(match.group(1))


def instructions_per_sentence(n: int, acking: bool, keep: str | None = None,
                              workload: str = "wordcount") -> tuple[float, dict[str, float]]:
    """Machine instructions per sentence, in all and by stage.

    The difference of callgrind's totals at 3,000 and 1,000 sentences, so start-up cancels.
    With ``keep`` the two profiles are kept in that directory (see ``--from``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        where = keep or tmp
        os.makedirs(where, exist_ok=True)
        tag = _tag(n, acking, workload)
        small, large = (os.path.join(where, f"{tag}-{k}.callgrind") for k in (1000, 3000))
        _instructions(n, 3000, acking, large, workload)
        _instructions(n, 1000, acking, small, workload)
        return stages_from(small, large)


def free_instructions_per_sentence(workload: str = "wordcount") -> float:
    """Machine instructions per sentence of Storm's API calls alone (``drive_free``).

    The same difference of runs of 3,000 and 1,000 sentences as
    ``instructions_per_sentence``: what any engine calling these components pays.
    """
    return (_instructions(1, 3000, True, workload=workload, free=True)
            - _instructions(1, 1000, True, workload=workload, free=True)) / 2000


def _tag(n: int, acking: bool, workload: str) -> str:
    tag = f"{n}w-{'on' if acking else 'off'}"
    return tag if workload == "wordcount" else f"{workload}-{tag}"


def stages_from(small: str, large: str) -> tuple[float, dict[str, float]]:
    """Per sentence, in all and by stage, from profiles of 1,000 and 3,000 sentences."""
    a, b = stage_costs(large), stage_costs(small)
    stages = {s: (a[s] - b[s]) / 2000 for s in STAGE_NAMES}
    return sum(stages.values()), stages


def main(argv: list[str] | None = None) -> int:
    """Print opcodes and CPU time (or instructions) per sentence, ackers on and off."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--top", type=int, default=12, help="functions to list (ackers on)")
    parser.add_argument("--instructions", action="store_true",
                        help="count machine instructions with valgrind instead")
    parser.add_argument("--keep", metavar="DIR",
                        help="with --instructions: keep the callgrind profiles in DIR")
    parser.add_argument("--from", dest="source", metavar="DIR",
                        help="print the stages of profiles kept by --keep (no new run)")
    parser.add_argument("--workload", choices=WORKLOADS, default="wordcount")
    parser.add_argument("--no-chaining", action="store_true",
                        help="squall.chaining False: every bolt in a task of its own")
    parser.add_argument("--floor", action="store_true",
                        help="with --instructions: also count the API's calls alone (a free "
                             "engine), and the engine's share of the acked count")
    parser.add_argument("--drive", nargs=3, metavar=("WORKERS", "SENTENCES", "ACKING"),
                        help=argparse.SUPPRESS)  # one run, for --instructions
    args = parser.parse_args(argv)
    global CHAINING
    CHAINING = not args.no_chaining
    if args.drive:
        if args.floor:
            _drive_free_once(int(args.drive[1]), args.workload)
        else:
            _drive_once(int(args.drive[0]), int(args.drive[1]), args.drive[2] == "on",
                        args.workload)
        return 0
    from squall import _speedups

    print(f"hot path: {_speedups.STATE}")
    if args.source:
        for acking in (True, False):
            tag = _tag(args.workers, acking, args.workload)
            ir, stages = stages_from(*(os.path.join(args.source, f"{tag}-{k}.callgrind")
                                       for k in (1000, 3000)))
            print(f"ackers {'on ' if acking else 'off'}: {ir:,.0f} instructions/sentence "
                  f"({args.workers} worker(s))")
            print("    " + "  ".join(f"{s} {v / 1000:,.1f}k" for s, v in stages.items()))
        return 0
    if args.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
        acked = 0.0
        for acking in (True, False):
            ir, stages = instructions_per_sentence(args.workers, acking, args.keep, args.workload)
            acked = acked or ir
            print(f"ackers {'on ' if acking else 'off'}: {ir:,.0f} instructions/sentence "
                  f"({args.workers} worker(s))")
            print("    " + "  ".join(f"{s} {v / 1000:,.1f}k" for s, v in stages.items()))
        if args.floor:
            free = free_instructions_per_sentence(args.workload)
            print(f"API alone (free engine): {free:,.0f} instructions/sentence; the engine's "
                  f"own {acked - free:,.0f} ({(acked - free) / acked:.0%} of the acked count); "
                  f"API ÷ acked {free / acked:.2f}")
        return 0
    for acking in (True, False):
        ops, per = opcodes(args.workers, args.sentences, acking, args.workload)
        cpu = cpu_us(args.workers, args.sentences * 3, acking, workload=args.workload)
        print(f"ackers {'on ' if acking else 'off'}: {ops:,.0f} opcodes/sentence, "
              f"{cpu:.1f} CPU-us/sentence ({args.workers} worker(s))")
        if acking:
            for (path, name), count in per.most_common(args.top):
                print(f"    {count / args.sentences:7,.0f}  {path}:{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
