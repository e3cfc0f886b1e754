"""What the slow sentences of a paced word count on Spark lived through: ``python -m benchmarks.tail``.

    python -m benchmarks.tail [--rate 100000] [--runs 1] [--warmup 1] [--duration 6]
                              [--workers 2] [--slow-ms 5] [--burst-ms 1]

Submits the acked word count paced at ``--rate`` sentences/s (as ``benchmarks.spread
--rate``, issue 40's p99 at 50% load) and records the kernel's scheduler over the measured
window (``perf sched record``, on ``CLOCK_MONOTONIC``, the clock the spouts stamp their
sentences with). Then, for the sentences slower than ``--slow-ms`` (emit -> tuple tree
acked), it asks which threads ran for ``--burst-ms`` or more at a stretch, on any core,
while the sentence was alive: a worker's loop that cannot run for some milliseconds holds
every tree that crosses it for as long. Per class of thread it prints the share of the slow
sentences and the share of all sentences that lived through such a run, how many runs
there were and how long, and the p99 of the sentences that no run outside squall's workers
touched. Classes: ``worker loop`` (each worker's busiest thread, squall's own work),
``worker ZeroMQ I/O`` and ``worker other``, ``driver <thread>`` (this process: the topology
master's threads by their Python names, the Spark driver's Python), ``Spark JVM`` (by thread
name: ``C1``/``C2`` compilers, ``G1`` collector, ``VM`` threads, the rest), ``kernel
<name>`` (kernel threads: no command line) and ``other <name>``.

Needs ``perf`` (Debian's ``linux-perf``) with the scheduler's tracepoints readable: root, or
``kernel.perf_event_paranoid`` at -1.
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.peers._measure import Latencies, percentiles_ms

# ``    610.598819 [0001]  rcu_preempt[15]        930.302      0.000      4.469``
_ROW = re.compile(r"^\s*(\d+\.\d+)\s+\[(\d+)\]\s+(.+?)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s*$")
_NAME = re.compile(r"^(.*)\[(\d+)(?:/(\d+))?\]$")


@dataclass(frozen=True)
class Run:
    """One stretch a thread ran on a core without a switch (seconds, CLOCK_MONOTONIC)."""

    start: float
    end: float
    cpu: int
    comm: str
    tid: int
    pid: int  # the thread's process (its own tid for a kernel thread or a main thread)


def parse_timehist(text: str) -> list[Run]:
    """The runs in ``perf sched timehist`` output (idle excluded)."""
    runs = []
    for line in text.splitlines():
        m = _ROW.match(line)
        if m is None:
            continue
        name = _NAME.match(m.group(3))
        if name is None or name.group(1) == "<idle>":
            continue
        end, run_ms = float(m.group(1)), float(m.group(6))
        tid = int(name.group(2))
        pid = int(name.group(3)) if name.group(3) else tid
        runs.append(Run(end - run_ms / 1000.0, end, int(m.group(2)), name.group(1), tid, pid))
    return runs


def jvm_class(comm: str) -> str:
    """A JVM thread's class by its name."""
    for prefix, label in (("C1 ", "C1 compiler"), ("C2 ", "C2 compiler"), ("G1 ", "G1 collector"),
                          ("VM ", "VM threads")):
        if comm.startswith(prefix):
            return f"Spark JVM {label}"
    return "Spark JVM other"


@dataclass
class Roles:
    """Which process is which: the workers (and each one's loop thread), the driver, the JVM."""

    workers: set[int]
    loops: set[int]
    driver: int
    jvm: int | None
    kernel: set[int] = field(default_factory=set)  # pids seen to have no command line
    driver_threads: dict[int, str] = field(default_factory=dict)  # tid -> Python thread, its kind

    def classify(self, run: Run) -> str:
        """The class of the thread that made ``run`` (see the module docs)."""
        if run.pid in self.workers:
            if run.tid in self.loops:
                return "worker loop"
            return "worker ZeroMQ I/O" if run.comm.startswith("ZMQbg/IO") else "worker other"
        if run.pid == self.driver:
            name = self.driver_threads.get(run.tid)
            return f"driver {name}" if name else "driver"
        if self.jvm is not None and run.pid == self.jvm:
            return jvm_class(run.comm)
        if run.pid in self.kernel:
            return f"kernel {re.sub(r'[/:.].*$', '', run.comm)}"
        return f"other {run.comm}"


def loop_threads(runs: list[Run], workers: set[int]) -> set[int]:
    """Each worker's busiest thread by run time: its loop."""
    used: dict[tuple[int, int], float] = defaultdict(float)
    for r in runs:
        if r.pid in workers:
            used[(r.pid, r.tid)] += r.end - r.start
    busiest: dict[int, tuple[float, int]] = {}
    for (pid, tid), secs in used.items():
        if secs > busiest.get(pid, (-1.0, 0))[0]:
            busiest[pid] = (secs, tid)
    return {tid for _, tid in busiest.values()}


def driver_threads() -> dict[int, str]:
    """The Python threads of the process by native id, by kind (no topology name: ``squall-master``)."""
    names = {}
    for t in threading.enumerate():
        if t.native_id is not None:
            kind = re.sub(r"-spread-\d+", "", t.name)  # squall-master-spread-1-pages: squall-master-pages
            names[t.native_id] = re.sub(r"^Thread-\d+", "Thread", kind)
    return names


def is_kernel_thread(pid: int) -> bool:
    """A kernel thread: no command line (read while it still exists)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == b""
    except OSError:
        return False


@dataclass
class Attribution:
    """The slow sentences and what they lived through, per class of thread."""

    sentences: int
    slow: int
    p50_ms: float
    p99_ms: float
    p99_untouched_ms: float  # of the sentences no run outside the workers touched
    outside_slow: float  # share of the slow sentences an outside run touched
    outside_all: float
    # class, share of the slow, share of all, runs, median and longest run in ms
    rows: list[tuple[str, float, float, int, float, float]]


def attribute(pairs: list[tuple[float, float]], runs: list[Run], roles: Roles, slow_s: float,
              burst_s: float, sample_every: int = 20) -> Attribution:
    """Which classes of thread ran ``burst_s`` or more while each sentence was alive.

    ``pairs``: (completion time, latency) of each sentence; the share of all sentences is
    taken over every ``sample_every``-th one.
    """
    if not pairs:
        raise ValueError("no sentence completed in the window")
    bursts: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        if r.end - r.start >= burst_s:
            bursts[roles.classify(r)].append(r)
    for rs in bursts.values():
        rs.sort(key=lambda r: r.start)
    index = {c: (rs, [r.start for r in rs]) for c, rs in bursts.items()}
    longest = {c: max(r.end - r.start for r in rs) for c, rs in bursts.items()}

    def touched(done: float, latency: float) -> set[str]:
        born = done - latency
        hit = set()
        for c, (rs, starts) in index.items():
            i = bisect.bisect_right(starts, done)  # runs that started before the sentence completed
            j = bisect.bisect_left(starts, born - longest[c])  # none before this can reach its birth
            if any(r.end >= born for r in rs[j:i]):
                hit.add(c)
        return hit

    outside = {c for c in bursts if not c.startswith("worker ")}
    slow = [(d, lat) for d, lat in pairs if lat > slow_s]
    some = pairs[::sample_every]
    slow_hits = [touched(d, lat) for d, lat in slow]
    some_hits = [touched(d, lat) for d, lat in some]
    everything = percentiles_ms([lat for _, lat in pairs])
    untouched = percentiles_ms([lat for (_, lat), hits in zip(some, some_hits, strict=True)
                                if not hits & outside])["latency_p99_ms"]
    rows = []
    for c, rs in bursts.items():
        lengths = sorted((r.end - r.start) * 1000.0 for r in rs)
        rows.append((c, share(sum(c in h for h in slow_hits), len(slow)),
                     share(sum(c in h for h in some_hits), len(some)), len(rs),
                     statistics.median(lengths), lengths[-1]))
    rows.sort(key=lambda row: -row[1])
    return Attribution(
        sentences=len(pairs), slow=len(slow), p50_ms=everything["latency_p50_ms"] or 0.0,
        p99_ms=everything["latency_p99_ms"] or 0.0,
        p99_untouched_ms=float("nan") if untouched is None else untouched,
        outside_slow=share(sum(bool(h & outside) for h in slow_hits), len(slow)),
        outside_all=share(sum(bool(h & outside) for h in some_hits), len(some)), rows=rows)


def share(n: int, of: int) -> float:
    return n / of if of else float("nan")


def report(a: Attribution, rate: float | None, slow_ms: float, burst_ms: float) -> str:
    """The table ``main`` prints."""
    paced = f"paced at {rate:,.0f}/s" if rate else "unpaced"
    lines = [f"{a.sentences:,} sentences in the window ({paced}): "
             f"p50 {a.p50_ms:.1f} ms, p99 {a.p99_ms:.1f} ms; "
             f"{a.slow:,} over {slow_ms:g} ms ({share(a.slow, a.sentences):.2%})",
             f"threads that ran {burst_ms:g} ms or more at a stretch while a sentence was alive:",
             f"  {'class':<32} {'of slow':>8} {'of all':>7} {'runs':>6} {'median ms':>10} {'max ms':>7}"]
    for c, slow_share, all_share, n, median, longest in a.rows:
        lines.append(f"  {c:<32} {slow_share:>8.0%} {all_share:>7.0%} {n:>6} {median:>10.1f} {longest:>7.1f}")
    lines.append(f"  {'outside the workers (any)':<32} {a.outside_slow:>8.0%} {a.outside_all:>7.0%}")
    lines.append(f"p99 of the sentences no run outside the workers touched: {a.p99_untouched_ms:.1f} ms")
    return "\n".join(lines)


class SchedWatch:
    """``perf sched record`` over a submission's window; the runs and roles it saw."""

    def __init__(self, workdir: str) -> None:
        self.data = os.path.join(workdir, "sched.data")
        self.proc: subprocess.Popen | None = None
        self.roles: Roles | None = None
        self.runs: list[Run] = []
        self.pairs: list[tuple[float, float]] = []

    def start(self, pids: dict[int, int], jvm: int | None) -> None:
        """Start recording (the window opens)."""
        self.roles = Roles(workers=set(pids.values()), loops=set(), driver=os.getpid(), jvm=jvm,
                           driver_threads=driver_threads())
        self.proc = subprocess.Popen(["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-o", self.data],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> None:
        """Stop recording (the window closed): perf writes its file on SIGINT."""
        assert self.proc is not None and self.roles is not None
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=60)
        if self.proc.returncode not in (0, -signal.SIGINT) or not os.path.exists(self.data):
            raise RuntimeError(f"perf sched record failed (exit {self.proc.returncode}): "
                               f"{err.decode(errors='replace').strip()[-300:]}")
        text = subprocess.run(["perf", "sched", "timehist", "-i", self.data], capture_output=True,
                              text=True, check=True).stdout
        self.runs = parse_timehist(text)
        self.roles.kernel = {r.pid for r in self.runs if r.pid == r.tid and is_kernel_thread(r.pid)}
        self.roles.loops = loop_threads(self.runs, self.roles.workers)

    def latencies(self, latencies: Latencies, t0: float, t1: float) -> None:
        """Keep the window's (completion, latency) pairs."""
        self.pairs = [(d, lat) for d, lat in latencies if t0 <= d <= t1]


def paced_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """The options of a tool that explains the paced word count's slow sentences (this one, ``rounds``)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    parser.add_argument("--rate", type=float, default=100_000.0, help="sentences/s in all (default 100,000)")
    parser.add_argument("--runs", type=int, default=1, help="submissions, each explained apart")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slow-ms", type=float, default=5.0,
                        help="a slow sentence (default 5: issue 40's p99)")
    return parser


def spread_args(args: argparse.Namespace, conf: list | None = None) -> argparse.Namespace:
    """``spread.submission``'s options for the paced word count of ``paced_parser``'s ``args``."""
    return argparse.Namespace(warmup=args.warmup, duration=args.duration, workers=args.workers,
                              rate=args.rate, gc="default", conf=conf or [], pin="none", calibrate=False)


def main(argv: list[str] | None = None) -> int:
    parser = paced_parser("python -m benchmarks.tail", __doc__)
    parser.add_argument("--burst-ms", type=float, default=1.0, help="a run that counts (default 1)")
    args = parser.parse_args(argv)
    if args.rate <= 0 or args.runs < 1 or args.duration <= 0 or args.slow_ms <= 0 or args.burst_ms <= 0:
        parser.error("--rate, --runs, --duration, --slow-ms and --burst-ms must be above 0")
    if shutil.which("perf") is None:
        parser.error("needs perf (Debian's linux-perf) on the PATH")
    from benchmarks import spread
    from benchmarks.squall_runner import LOG_DIR, spark_master
    from squall.spark import SparkCluster

    LOG_DIR.mkdir(parents=True, exist_ok=True)
    print(f"tail: {args.runs} submission(s) of the acked word count paced at {args.rate:,.0f}/s, "
          f"{args.workers} workers, {args.warmup:g}s warm-up + {args.duration:g}s measured under "
          f"perf sched; load {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="squall-tail-") as workdir, \
            SparkCluster(master=spark_master(args.workers), log_dir=str(LOG_DIR)) as cluster:
        cluster.start()
        for i in range(1, args.runs + 1):
            watch = SchedWatch(workdir)
            row = spread.submission(cluster, i, spread_args(args), watch=watch)
            assert watch.roles is not None
            print(f"\nsubmission {i}: {row['tps']:,.0f} sentences/s, "
                  f"{row['us_per_sentence']:.1f} us of worker CPU a sentence", flush=True)
            found = attribute(watch.pairs, watch.runs, watch.roles, args.slow_ms / 1000.0,
                              args.burst_ms / 1000.0)
            print(report(found, args.rate, args.slow_ms, args.burst_ms), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
