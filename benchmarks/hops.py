"""Where a paced word count's latency goes, hop by hop: ``python -m benchmarks.hops``.

    python -m benchmarks.hops [--rate 48000] [--seconds 6] [--workers 2] [--runs 1]
                              [--batch-time-ms 1 1e9]

Runs the word count on ``SparkCluster`` (``local[N]``, one Python worker process per squall
worker) with its spout paced at ``--rate`` sentences/s and ackers on, as the ``latency``
workload does, but with timestamps in the tuples: the spout emits ``[sentence, seq,
t_emit]``, split passes ``seq``, ``t_emit``, its own start time and pid on with each word,
and count writes, for a sample of sentences, when each word's ``execute`` started. The
spout writes when each sampled sentence's tree was acked. All times are
``time.perf_counter()`` (CLOCK_MONOTONIC, one clock for every process of the machine).

For each sampled sentence the harness splits the end-to-end latency into

- ``to split``: emit -> split's ``execute`` starts (the spout's flush, the wire, split's queue),
- ``split``: split's start -> the last of its words starts in count (split's own work, the
  flush of its words, the wire, count's queue),
- ``to ack``: that count start -> the spout's ``ack`` (count's work, the acks to the acker,
  the acker's verdict back to the spout),

and prints their percentiles over all sentences and over the slowest 1%, each hop marked
local (same process) or crossing; for the slowest local hops, the CPU time their process
used meanwhile (wall far above CPU: the process was not running, e.g. other load on the
machine); how many stretches of time the slowest 1% fall in (few: pauses, not structure);
and the spout workers' CPU use. ``--batch-time-ms`` runs each of its values in turn as
``squall.transfer.batch.time.ms`` (``1e9``: a send only at each round's end, as before).
The extra fields make each tuple a little larger than the plain word count's; the rate is
fixed, so runs at different builds are comparable.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

from squall import BasicBolt, Config, Fields, Spout, TopologyBuilder

SENTENCES = ("the cow jumped over the moon", "an apple a day keeps the doctor away",
             "four score and seven years ago", "snow white and the seven dwarfs",
             "i am at two with nature")
SAMPLE = 4  # one sentence in this many is written down
FLUSH_SECS = 0.2
CATCH_UP = 64


def sampled(seq: int) -> bool:
    """Whether sentence ``seq`` is written down (one in ``SAMPLE``, from every spout task).

    Hashed: each spout task takes every n-th seq, so ``seq % SAMPLE`` with two spouts saw
    only the first one's sentences, and so only worker 0's split.
    """
    return (seq * 2654435761 >> 8) % SAMPLE == 0


class _Log:
    """Float64 records appended to ``<dir>/<name>.bin`` every ``FLUSH_SECS``."""

    def __init__(self, directory: str, name: str) -> None:
        self._file = open(Path(directory) / f"{name}.bin", "ab")  # noqa: SIM115
        self.rows = array("d")
        self._last = time.perf_counter()

    def maybe_flush(self, now: float) -> None:
        if now - self._last >= FLUSH_SECS:
            self._last = now
            self.rows.tofile(self._file)
            self._file.flush()
            self.rows = array("d")


class TimedSpout(Spout):
    """Paced sentences with a sequence number and their emit time; writes (seq, emit, ack)."""

    def __init__(self, directory: str, rate: float) -> None:
        self.directory = directory
        self.rate = rate

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        tasks = context.get_this_component_tasks()
        self._collector = collector
        self._task = context.task_id
        self._seq = tasks.index(context.task_id)
        self._step = len(tasks)
        self._interval = len(tasks) / self.rate
        self._due = time.perf_counter()
        self._emitted: dict[int, float] = {}
        self._cpu: dict[int, float] = {}
        self._log = _Log(self.directory, f"spout-{self._task}")

    def next_tuple(self) -> None:
        now = time.perf_counter()
        n = 0
        while self._due <= now and n < CATCH_UP:
            seq = self._seq
            self._seq += self._step
            t = time.perf_counter()
            self._emitted[seq] = t
            if sampled(seq):
                self._cpu[seq] = time.process_time()
            self._collector.emit([SENTENCES[seq % 5], seq, t], msg_id=seq)
            self._due += self._interval
            n += 1
        if not n:
            self._log.maybe_flush(now)

    def ack(self, msg_id: Any) -> None:
        now = time.perf_counter()
        t = self._emitted.pop(msg_id, None)
        if t is not None and sampled(msg_id):
            self._log.rows.extend((msg_id, t, now, os.getpid(), self._cpu.pop(msg_id, 0.0),
                                   time.process_time()))
        else:
            self._cpu.pop(msg_id, None)
        self._log.maybe_flush(now)  # a spout always behind never has an empty call

    def fail(self, msg_id: Any) -> None:
        self._emitted.pop(msg_id, None)
        self._cpu.pop(msg_id, None)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("sentence", "seq", "t_emit"))


class TimedSplit(BasicBolt):
    """Split, passing the sentence's seq and emit time, its own start time and pid."""

    def prepare(self, conf: dict, context: Any) -> None:
        self._pid = os.getpid()

    def execute(self, tup: Any, collector: Any) -> None:
        t = time.perf_counter()
        c = time.process_time()
        seq = tup[1]
        t_emit = tup[2]
        pid = self._pid
        for word in tup[0].split(" "):
            collector.emit([word, seq, t_emit, t, pid, c])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "seq", "t_emit", "t_split", "pid", "c_split"))


class TimedCount(BasicBolt):
    """Counts words; writes (seq, t_split, t_count, split pid, own pid) for sampled ones."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def prepare(self, conf: dict, context: Any) -> None:
        self.counts: dict[str, int] = {}
        self._pid = os.getpid()
        self._log = _Log(self.directory, f"count-{context.task_id}")

    def execute(self, tup: Any, collector: Any) -> None:
        t = time.perf_counter()
        word = tup[0]
        count = self.counts.get(word, 0) + 1
        self.counts[word] = count
        collector.emit([word, count])
        seq = tup[1]
        if sampled(int(seq)):
            self._log.rows.extend((seq, tup[3], t, tup[4], self._pid, tup[5], time.process_time()))
        self._log.maybe_flush(t)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def topology(directory: str, workers: int, rate: float) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("sentence", TimedSpout(directory, rate), parallelism=workers)
    builder.set_bolt("split", TimedSplit(), parallelism=workers).shuffle_grouping("sentence")
    builder.set_bolt("count", TimedCount(directory),
                     parallelism=workers).fields_grouping("split", Fields("word"))
    return builder.create_topology()


def _read(directory: str, prefix: str, width: int) -> list[tuple[float, ...]]:
    rows: list[tuple[float, ...]] = []
    for path in sorted(Path(directory).glob(f"{prefix}-*.bin")):
        raw = path.read_bytes()
        a = array("d")
        a.frombytes(raw[: len(raw) // (8 * width) * 8 * width])
        rows += [tuple(a[i:i + width]) for i in range(0, len(a), width)]
    return rows


def pct(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``, in ms."""
    if not values:
        return float("nan")
    s = sorted(values)
    return 1000.0 * s[min(len(s) - 1, int(p / 100.0 * len(s)))]


def analyse(directory: str, t0: float, t1: float) -> dict[str, Any]:
    """Per-hop figures of the sentences emitted in [t0, t1)."""
    spout = {int(r[0]): r for r in _read(directory, "spout", 6) if t0 <= r[1] < t1}
    words: dict[int, list[tuple[float, ...]]] = {}
    for r in _read(directory, "count", 7):
        if int(r[0]) in spout:
            words.setdefault(int(r[0]), []).append(r)
    rows = []
    for seq, (_, t_emit, t_ack, spid, c_emit, c_ack) in spout.items():
        ws = words.get(seq)
        if not ws:
            continue
        t_split = ws[0][1]
        split_pid = ws[0][3]
        last = max(ws, key=lambda w: w[2])
        rows.append({"total": t_ack - t_emit, "to_split": t_split - t_emit,
                     "split": last[2] - t_split, "to_ack": t_ack - last[2],
                     "first_cross": split_pid != spid,
                     "last_cross": last[4] != split_pid,
                     "ack_cross": last[4] != spid,
                     "word_hops": [(w[2] - w[1], w[4] != w[3], w[6] - w[5]) for w in ws],
                     "emit": t_emit,
                     # the spout's process: CPU it used while the sentence was out, when
                     # the whole tree stayed in it
                     "cpu": (c_ack - c_emit) if all(w[4] == spid for w in ws) else None})
    cpu = {}
    for pid in {r[3] for r in spout.values()}:
        mine = sorted((r[2], r[5]) for r in spout.values() if r[3] == pid)
        if len(mine) > 1 and mine[-1][0] > mine[0][0]:
            cpu[int(pid)] = (mine[-1][1] - mine[0][1]) / (mine[-1][0] - mine[0][0])
    return {"rows": rows, "cpu": cpu}


def report(result: dict[str, Any]) -> str:
    rows = result["rows"]
    out = []
    if not rows:
        return "no sampled sentence completed"
    totals = [r["total"] for r in rows]
    out.append(f"sentences sampled {len(rows):,}: total p50 {pct(totals, 50):.2f} ms, "
               f"p90 {pct(totals, 90):.2f}, p99 {pct(totals, 99):.2f}, p99.9 {pct(totals, 99.9):.2f}")
    cut = sorted(totals)[int(0.99 * len(totals))]
    slow = [r for r in rows if r["total"] >= cut]
    for name, sel in (("all", rows), ("slowest 1%", slow)):
        out.append(f"  {name} ({len(sel):,}): hop medians / p90 (ms)")
        for hop in ("to_split", "split", "to_ack"):
            vals = [r[hop] for r in sel]
            out.append(f"    {hop:9s} p50 {pct(vals, 50):6.2f}  p90 {pct(vals, 90):6.2f}  "
                       f"p99 {pct(vals, 99):6.2f}")
        out.append(f"    first hop crossing {sum(r['first_cross'] for r in sel) / len(sel):.0%}, "
                   f"last word crossing {sum(r['last_cross'] for r in sel) / len(sel):.0%}, "
                   f"ack back crossing {sum(r['ack_cross'] for r in sel) / len(sel):.0%}")
    hops = [h for r in rows for h in r["word_hops"]]
    for crossing in (False, True):
        vals = [d for d, c, _ in hops if c == crossing]
        out.append(f"  split start -> count start, {'crossing' if crossing else 'local':8s} "
                   f"({len(vals):,} words): p50 {pct(vals, 50):.2f}  p90 {pct(vals, 90):.2f}  "
                   f"p99 {pct(vals, 99):.2f} ms")
    local = [(d, c) for d, x, c in hops if not x]
    if local:
        cut = sorted(d for d, _ in local)[int(0.99 * len(local))]
        slow_local = [(d, c) for d, c in local if d >= cut]
        wall = pct([d for d, _ in slow_local], 50)
        out.append(f"  slowest 1% of local split->count hops: wall p50 {wall:.2f}"
                   f" ms, the process's CPU in that time p50 {pct([c for _, c in slow_local], 50):.2f} ms "
                   "(wall - CPU: the process was not running)")
    # are the slow sentences clustered in time (pauses) or spread (structure)?
    emits = sorted(r["emit"] for r in slow)
    if emits:
        clusters = 1 + sum(1 for a, b in zip(emits, emits[1:], strict=False) if b - a > 0.05)
        out.append(f"  the slowest 1% fall in {clusters} stretch(es) of time (gaps over 50 ms between them)")
    out.append("  worker CPU (cores, from the spouts' process_time): " +
               ", ".join(f"{c:.2f}" for c in result["cpu"].values()))
    return "\n".join(out)


def run(rate: float, seconds: float, workers: int, extra: dict[str, Any],
        warmup: float = 2.0) -> dict[str, Any]:
    from squall.spark import SparkCluster

    with tempfile.TemporaryDirectory(prefix="squall-hops-") as d, \
            SparkCluster(master=f"local[{workers}]", log_dir=os.path.join(d, "logs")) as cluster:
        cluster.start()
        conf = Config()
        conf.set_num_workers(workers)
        conf.set_max_spout_pending(500)
        conf.update(extra)
        cluster.submit_topology("hops", conf, topology(d, workers, rate))
        time.sleep(warmup)
        t0 = time.perf_counter()
        time.sleep(seconds)
        t1 = time.perf_counter()
        time.sleep(0.6)
        cluster.kill_topology("hops", wait_secs=0)
        return analyse(d, t0, t1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hops", description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=48000.0, help="sentences/s (all spouts)")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--batch-time-ms", type=float, nargs="*", default=[],
                        help="squall.transfer.batch.time.ms; several values alternate run by run")
    args = parser.parse_args(argv)
    variants: list[float | None] = list(args.batch_time_ms) or [None]
    for i in range(args.runs):
        for batch_ms in variants:
            extra = {} if batch_ms is None else {"squall.transfer.batch.time.ms": batch_ms}
            load = os.getloadavg()[0]
            result = run(args.rate, args.seconds, args.workers, extra)
            print(f"run {i + 1}: rate {args.rate:,.0f}/s, {args.workers} workers, batch time "
                  f"{'default' if batch_ms is None else batch_ms} ms, load {load:.1f} -> "
                  f"{os.getloadavg()[0]:.1f}")
            print(report(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
