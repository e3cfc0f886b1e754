"""The data plane at 2 to 32 real workers on one machine (``python -m benchmarks.scale --data-plane``).

Real worker processes on Spark (``local[N]``: each squall worker a long-running Spark task
in a Python worker process of its own), running a word count where every worker sends to
every other: N spout tasks emit sentences of words drawn from ``VOCABULARY`` words, the
split bolt (shuffle grouping: any split task) emits each word, and the count bolt (fields
grouping on the word: every count task gets words) counts them, one task of each per
worker, acked. At each N:

- ``submit_s``: ``submit_topology`` until every task is open (the SparkContext is started
  before, so Spark's own start is left out; the Python workers' start is in);
- ``words_per_s``: words counted per second over the window (the count tasks' ``executed``),
  and ``sentences_acked_per_s`` (tuple trees completed);
- with the spouts deactivated: ``idle_cpu_per_worker`` (cores, from ``/proc``), and per
  worker ``rss_mib`` and ``sockets`` (its open socket descriptors: ZeroMQ's to its peers and
  the master, and Spark's to its JVM);
- ``kill_s``: ``kill_topology(wait_secs=0)`` until every worker stopped.

Each figure is printed against N with its growth exponent between the smallest and the
largest N. On a machine of few cores the workers share them: throughput does not grow with
N there, and the figures say what N costs, not what N buys.
"""

from __future__ import annotations

import math
import os
import random
import time
from pathlib import Path
from typing import Any

from squall import BasicBolt, Config, Fields, Spout, TopologyBuilder

VOCABULARY = 4096  # distinct words: with fields grouping, every count task gets some
WORDS_PER_SENTENCE = 8
MAX_SPOUT_PENDING = 200  # per spout task
CLK_TCK = os.sysconf("SC_CLK_TCK")


class SentenceSpout(Spout):
    """Sentences of random words, each with a message id (acked: not replayed on failure)."""

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        self._rng = random.Random(context.task_id)
        self._seq = 0

    def next_tuple(self) -> None:
        self._seq += 1
        words = " ".join(f"w{self._rng.randrange(VOCABULARY)}" for _ in range(WORDS_PER_SENTENCE))
        self._collector.emit([words], msg_id=self._seq)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("sentence"))


class Split(BasicBolt):
    """Emits each word of a sentence."""

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup[0].split():
            collector.emit([word])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class Count(BasicBolt):
    """Counts each word."""

    def prepare(self, conf: dict, context: Any) -> None:
        self.counts: dict[str, int] = {}

    def execute(self, tup: Any, collector: Any) -> None:
        self.counts[tup[0]] = self.counts.get(tup[0], 0) + 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def topology(workers: int) -> tuple[Any, Config]:
    """The word count of the module docstring, one task of each component per worker."""
    b = TopologyBuilder()
    b.set_spout("sentence", SentenceSpout(), parallelism=workers)
    b.set_bolt("split", Split(), parallelism=workers).shuffle_grouping("sentence")
    b.set_bolt("count", Count(), parallelism=workers).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_max_spout_pending(MAX_SPOUT_PENDING)
    return b.create_topology(), conf


def cpu_secs(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def rss_mib(pid: int) -> float:
    """The resident set of process ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def sockets(pid: int) -> int:
    """Open socket descriptors of process ``pid``."""
    fd_dir = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fd_dir.iterdir():
        try:
            count += os.readlink(fd).startswith("socket:")
        except OSError:
            continue
    return count


def executed(info: dict, component: str) -> int:
    """Tuples ``component``'s tasks executed so far."""
    return int(info["components"][component].get("executed") or 0)


def acked_sentences(info: dict) -> int:
    """Sentences whose tuple tree completed so far."""
    return int(info["components"]["sentence"].get("acked") or 0)


def measure(workers: int, window: float, idle_window: float, log_dir: str) -> dict[str, Any]:
    """One N: the figures of the module docstring."""
    from squall.spark import SparkCluster

    out: dict[str, Any] = {"workers": workers}
    topo, conf = topology(workers)
    with SparkCluster(master=f"local[{workers}]", log_dir=log_dir) as cluster:
        cluster.start(dict(conf))
        t = time.monotonic()
        cluster.submit_topology("data", conf, topo)
        out["submit_s"] = time.monotonic() - t
        time.sleep(min(5.0, window))  # warm up: every worker's links to the others open
        info = cluster.get_topology_info("data")
        before, acked, t0 = executed(info, "count"), acked_sentences(info), time.monotonic()
        time.sleep(window)
        info = cluster.get_topology_info("data")
        elapsed = time.monotonic() - t0
        out["words_per_s"] = (executed(info, "count") - before) / elapsed
        out["sentences_acked_per_s"] = (acked_sentences(info) - acked) / elapsed
        out["failed"] = int(info["components"]["sentence"].get("failed") or 0)
        pids = [int(w["pid"]) for w in info["workers"] if w.get("pid")]
        cluster.deactivate("data")
        time.sleep(3.0)  # the bolts drain what was in flight
        cpu0, t0 = {p: cpu_secs(p) for p in pids}, time.monotonic()
        time.sleep(idle_window)
        elapsed = time.monotonic() - t0
        idle = [(cpu_secs(p) - cpu0[p]) / elapsed for p in pids]
        out["idle_cpu_per_worker"] = sum(idle) / len(idle)
        out["idle_cpu_max_worker"] = max(idle)
        out["rss_mib_per_worker"] = sum(rss_mib(p) for p in pids) / len(pids)
        out["sockets_per_worker"] = sum(sockets(p) for p in pids) / len(pids)
        out["sockets_max_worker"] = max(sockets(p) for p in pids)
        t = time.monotonic()
        cluster.kill_topology("data", wait_secs=0)
        out["kill_s"] = time.monotonic() - t
        out["load_average"] = os.getloadavg()[0]
    return out


ROWS = [
    ("submit_s", "s", "at 32 workers within 2x of 2 workers"),
    ("words_per_s", "/s", "(2 cores shared: not expected to grow)"),
    ("sentences_acked_per_s", "/s", f"({WORDS_PER_SENTENCE} words each)"),
    ("idle_cpu_per_worker", "cores", "<= 0.01"),
    ("idle_cpu_max_worker", "cores", ""),
    ("rss_mib_per_worker", "MiB", ""),
    ("sockets_per_worker", "", "(2 per peer: about 2N + 3)"),
    ("sockets_max_worker", "", ""),
    ("kill_s", "s", ""),
    ("failed", "", ""),
    ("load_average", "", "(1-minute, at the end of each N)"),
]


def table(results: list[dict]) -> str:
    """The figures against N, with the growth exponent between the smallest and largest N."""
    ns = [r["workers"] for r in results]
    lines = ["| figure (data plane) | " + " | ".join(f"N={n}" for n in ns) + " | growth | target |",
             "|" + "---|" * (len(ns) + 3)]
    for key, unit, target in ROWS:
        values = [r.get(key) for r in results]
        cells = ["-" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v) for v in values]
        first, last = values[0], values[-1]
        ok = (len(ns) > 1 and isinstance(first, (int, float)) and isinstance(last, (int, float))
              and first > 0 and last > 0 and key not in ("load_average", "failed"))
        g = f"{math.log(last / first) / math.log(ns[-1] / ns[0]):.2f}" if ok else "-"
        lines.append(f"| {key}{f' ({unit})' if unit else ''} | " + " | ".join(cells) + f" | {g} | {target} |")
    return "\n".join(lines) + "\n"
