"""What the workers' loops did while the slow sentences waited: ``python -m benchmarks.rounds``.

    python -m benchmarks.rounds [--rate 100000] [--runs 1] [--warmup 1] [--duration 6]
                                [--workers 2] [--slow-ms 5] [--conf KEY=VALUE ...]

Submits the acked word count paced at ``--rate`` sentences/s (as ``benchmarks.spread
--rate`` and ``benchmarks.tail``) with ``SQUALL_ROUND_TRACE`` set, so each worker records its
rounds (``squall.runtime.round_trace``): when each began, took the arrived frames, ran its
bolts and ended, and the loop thread's CPU time over it. On the same clock as the spouts'
stamps, each sentence slower than ``--slow-ms`` (emit -> tuple tree acked) is given the
longest stretch of one worker's loop while it was alive: a round, or a gap between two
rounds (the loop waiting for work, firing timers, running commands, or not scheduled).
Per kind of stretch it prints the share of the slow sentences and of all sentences whose
longest stretch it was, and that stretch's median length; a stretch is ``off CPU`` when
the loop thread ran less than half of it (its core went to another thread). Then the
rounds of each worker: per second, their length, where the time of a round went (taking
frames, the bolt passes, the spouts and sends) and, for rounds of ``--slow-ms`` or more,
what they held.
"""

from __future__ import annotations

import bisect
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.peers._measure import Latencies, percentiles_ms
from benchmarks.spread import conf_item
from benchmarks.tail import paced_parser, spread_args
from squall.runtime.round_trace import ENV, RoundRecord, load

OFF_CPU = 0.5  # a stretch whose loop thread ran less than this share of it was not running


@dataclass(frozen=True)
class Stretch:
    """A round, or the gap before one, of one worker's loop."""

    worker: int
    start: float
    end: float
    kind: str  # "gap" or the part of the round that took longest: "frames", "bolts", "spouts"
    cpu: float  # seconds the loop thread ran in it (a gap's: unknown, -1)


def stretches(worker: int, rounds: list[RoundRecord]) -> list[Stretch]:
    """Each round of ``rounds`` (oldest first) and the gap before it, as stretches."""
    out = []
    last_end = None
    for r in rounds:
        if last_end is not None and r.begun > last_end:
            out.append(Stretch(worker, last_end, r.begun, "gap", -1.0))
        parts = {"frames": r.received_at - r.begun, "bolts": r.bolts_at - r.received_at,
                 "spouts": r.ended - r.bolts_at}
        out.append(Stretch(worker, r.begun, r.ended, max(parts, key=parts.__getitem__),
                           r.cpu_ended - r.cpu_begun))
        last_end = r.ended
    return out


def label(s: Stretch) -> str:
    """The kind of a stretch, with whether its loop was off its core."""
    if s.kind == "gap":
        return "gap between rounds"
    length = s.end - s.start
    off = length > 0 and s.cpu < OFF_CPU * length
    return f"round, mostly {s.kind}" + (", off CPU" if off else "")


@dataclass
class Found:
    """The slow sentences' longest stretches, by kind, and the rounds' figures per worker."""

    sentences: int
    slow: int
    p50_ms: float
    p99_ms: float
    # kind, share of the slow, share of all, median length of those stretches in ms
    rows: list[tuple[str, float, float, float]]
    workers: list[str]


def longest_stretch(index: list[tuple[list[Stretch], list[float], float]], born: float,
                    done: float) -> Stretch | None:
    """The longest stretch of any worker's loop that overlaps ``[born, done]``."""
    best = None
    for ss, starts, longest in index:
        i = bisect.bisect_right(starts, done)
        j = bisect.bisect_left(starts, born - longest)
        for s in ss[j:i]:
            if s.end < born:
                continue
            if best is None or s.end - s.start > best.end - best.start:
                best = s
    return best


def analyse(pairs: list[tuple[float, float]], rounds: dict[int, list[RoundRecord]], slow_s: float,
            t0: float, t1: float, sample_every: int = 20) -> Found:
    """The slow sentences of ``pairs`` ((completion, latency) each) against the workers' rounds."""
    if not pairs:
        raise ValueError("no sentence completed in the window")
    if not any(rounds.values()):
        raise ValueError("no worker wrote its rounds")
    index = []
    for w, rs in sorted(rounds.items()):
        ss = stretches(w, rs)
        if ss:
            index.append((ss, [s.start for s in ss], max(s.end - s.start for s in ss)))
    slow = [(d, lat) for d, lat in pairs if lat > slow_s]
    some = pairs[::sample_every]
    slow_hits = [longest_stretch(index, d - lat, d) for d, lat in slow]
    some_hits = [longest_stretch(index, d - lat, d) for d, lat in some]
    kinds = sorted({label(s) for s in slow_hits + some_hits if s is not None})
    rows = []
    for k in kinds:
        mine = [s for s in slow_hits if s is not None and label(s) == k]
        lengths = [(s.end - s.start) * 1000.0 for s in mine]
        rows.append((k, len(mine) / len(slow) if slow else float("nan"),
                     sum(1 for s in some_hits if s is not None and label(s) == k) / len(some),
                     statistics.median(lengths) if lengths else float("nan")))
    rows.sort(key=lambda row: -row[1])
    everything = percentiles_ms([lat for _, lat in pairs])
    return Found(sentences=len(pairs), slow=len(slow), p50_ms=everything["latency_p50_ms"] or 0.0,
                 p99_ms=everything["latency_p99_ms"] or 0.0, rows=rows,
                 workers=[worker_line(w, [r for r in rs if t0 <= r.begun <= t1], slow_s)
                          for w, rs in sorted(rounds.items())])


def worker_line(worker: int, rounds: list[RoundRecord], slow_s: float) -> str:
    """One worker's rounds in the window: how many, how long, where their time went."""
    if not rounds:
        return f"worker {worker}: no round in the window"
    span = rounds[-1].ended - rounds[0].begun
    lengths = sorted((r.ended - r.begun) * 1000.0 for r in rounds)
    wall = sum(r.ended - r.begun for r in rounds)
    frames = sum(r.received_at - r.begun for r in rounds)
    bolts = sum(r.bolts_at - r.received_at for r in rounds)
    cpu = sum(r.cpu_ended - r.cpu_begun for r in rounds)
    long = [r for r in rounds if r.ended - r.begun >= slow_s]
    p99 = lengths[min(len(lengths) - 1, int(0.99 * len(lengths)))]
    text = (f"worker {worker}: {len(rounds) / span:,.0f} rounds/s, {wall / span:.0%} of the time in a round "
            f"(on CPU {cpu / wall:.0%} of it); round p50 {lengths[len(lengths) // 2]:.2f} ms, "
            f"p99 {p99:.2f} ms, max {lengths[-1]:.1f} ms; "
            f"time in frames {frames / wall:.0%}, bolts {bolts / wall:.0%}, spouts and sends "
            f"{(wall - frames - bolts) / wall:.0%}")
    if long:
        n = len(long)
        on_cpu = sum(r.cpu_ended - r.cpu_begun for r in long) / sum(r.ended - r.begun for r in long)
        text += (f"\n  {n} rounds of {slow_s * 1000:g} ms or more (on CPU {on_cpu:.0%}): "
                 f"mean {sum(r.received for r in long) / n:,.0f} tuples taken, "
                 f"{sum(r.bolt_work for r in long) / n:,.0f} bolt work, "
                 f"{sum(r.work - r.bolt_work - r.received for r in long) / n:,.0f} spout and other work, "
                 f"{sum(r.early_sends for r in long) / n:.1f} mid-round sends; "
                 f"{sum(r.throttled for r in long)} ended throttled")
    return text


def report(f: Found, rate: float, slow_ms: float) -> str:
    """The table ``main`` prints."""
    lines = [f"{f.sentences:,} sentences in the window (paced at {rate:,.0f}/s): p50 {f.p50_ms:.1f} ms, "
             f"p99 {f.p99_ms:.1f} ms; {f.slow:,} over {slow_ms:g} ms ({f.slow / f.sentences:.2%})",
             "the longest stretch of a worker's loop while a sentence was alive:",
             f"  {'kind':<36} {'of slow':>8} {'of all':>7} {'median ms (slow)':>17}"]
    for k, slow_share, all_share, median in f.rows:
        lines.append(f"  {k:<36} {slow_share:>8.0%} {all_share:>7.0%} {median:>17.1f}")
    lines.extend(f.workers)
    return "\n".join(lines)


class RoundWatch:
    """The submission's window and pairs, and the rounds its workers wrote (``spread``'s watch)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.pids: dict[int, int] = {}
        self.pairs: list[tuple[float, float]] = []
        self.t0 = self.t1 = 0.0

    def start(self, pids: dict[int, int], jvm: int | None) -> None:
        """The window opens: the workers' pids."""
        self.pids = dict(pids)

    def stop(self) -> None:
        """The window closes (the rounds come when the workers stop)."""

    def latencies(self, latencies: Latencies, t0: float, t1: float) -> None:
        """Keep the window's (completion, latency) pairs."""
        self.t0, self.t1 = t0, t1
        self.pairs = [(d, lat) for d, lat in latencies if t0 <= d <= t1]

    def rounds(self, timeout: float = 60.0) -> dict[int, list[RoundRecord]]:
        """Each worker's rounds, once its file is written (the worker writes it as it stops)."""
        want = {w: f"rounds-{pid}-{w}.bin" for w, pid in self.pids.items()}
        deadline = time.monotonic() + timeout
        while not all((self.directory / f).exists() for f in want.values()):
            if time.monotonic() >= deadline:
                missing = sorted(f for f in want.values() if not (self.directory / f).exists())
                raise RuntimeError(f"the workers did not write their rounds within {timeout:g}s: {missing}")
            time.sleep(0.2)
        time.sleep(0.5)  # a file seen may still be being written
        out = {w: load(self.directory / f) for w, f in want.items()}
        for f in want.values():
            (self.directory / f).unlink()  # a worker process reused by the next submission writes anew
        return out


def main(argv: list[str] | None = None) -> int:
    parser = paced_parser("python -m benchmarks.rounds", __doc__)
    parser.add_argument("--conf", type=conf_item, action="append", default=[], metavar="KEY=VALUE",
                        help="a topology setting for every submission (repeatable)")
    args = parser.parse_args(argv)
    if args.rate <= 0 or args.runs < 1 or args.duration <= 0 or args.slow_ms <= 0:
        parser.error("--rate, --runs, --duration and --slow-ms must be above 0")
    from benchmarks import spread
    from benchmarks.squall_runner import LOG_DIR, spark_master
    from squall.spark import SparkCluster

    LOG_DIR.mkdir(parents=True, exist_ok=True)
    print(f"rounds: {args.runs} submission(s) of the acked word count paced at {args.rate:,.0f}/s, "
          f"{args.workers} workers, {args.warmup:g}s warm-up + {args.duration:g}s measured, rounds "
          f"traced; load {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="squall-rounds-") as workdir:
        directory = Path(workdir)
        os.environ[ENV] = workdir  # before Spark starts: its Python workers inherit it
        with SparkCluster(master=spark_master(args.workers), log_dir=str(LOG_DIR)) as cluster:
            cluster.start()
            for i in range(1, args.runs + 1):
                watch = RoundWatch(directory)
                row = spread.submission(cluster, i, spread_args(args, args.conf), watch=watch)
                print(f"\nsubmission {i}: {row['tps']:,.0f} sentences/s, "
                      f"{row['us_per_sentence']:.1f} us of worker CPU a sentence", flush=True)
                found = analyse(watch.pairs, watch.rounds(), args.slow_ms / 1000.0, watch.t0, watch.t1)
                print(report(found, args.rate, args.slow_ms), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
