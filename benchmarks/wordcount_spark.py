"""Word count on ``SparkCluster``: the same topology and figures as ``wordcount_local``.

The topology is :func:`examples.word_count.build_topology` (endless random sentences,
split, fields-grouped count), run by two squall workers as long-lived Spark tasks on
``local[N]`` (``master``); they exchange tuples over ZeroMQ on loopback. A run starts the
SparkContext, submits, warms up, then measures the change of the counters in
``get_topology_info`` over ``duration_s``:

* throughput_tps: sentences acked by the spouts per second (with ackers off the spout acks
  each sentence as soon as it is emitted);
* latency: the spouts' complete latency p50/p99 from ``get_topology_info`` (ackers on only);
* rss_mb: resident memory of the worker processes, summed (what hosts the topology, as
  the single process does for ``squall-local``); the driver's Python and the JVM are
  reported apart as ``driver_rss_mb`` and ``jvm_rss_mb``.

Counters reach the driver with the workers' heartbeats (every second), so the measured
window is aligned to heartbeats only within a second; keep ``duration_s`` well above that.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from examples.word_count import build_topology
from squall import Config

WORKLOAD = "wordcount"
SYSTEM = "squall-spark"
SPOUT, COUNT = "sentence", "count"


def process_rss_mb(pid: int | None) -> float:
    """Resident memory of process ``pid`` in MB (0.0 when it cannot be read)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _jvm_pid(sc: Any) -> int | None:
    proc = getattr(getattr(sc, "_gateway", None), "proc", None)
    return getattr(proc, "pid", None)


def run(duration_s: float = 20.0, acking: bool = True, *, warmup_s: float = 5.0, workers: int = 2,
        master: str = "local[2]", max_spout_pending: int = 500, spouts: int = 5,
        splitters: int = 8, counters: int = 12) -> dict[str, Any]:
    """One measurement on Spark; returns a result row (see ``benchmarks.__main__``)."""
    import os

    from squall.spark import SparkCluster

    conf = Config()
    conf.set_num_workers(workers)
    if acking:
        conf.set_max_spout_pending(max_spout_pending)
    else:
        conf.set_num_ackers(0)
    topology = build_topology(spouts=spouts, splitters=splitters, counters=counters)
    name = f"bench-spark-{WORKLOAD}-{'ack' if acking else 'noack'}"
    log_dir = os.environ.get("SQUALL_LOG_DIR") or tempfile.mkdtemp(prefix="squall-bench-logs-")
    with SparkCluster(master=master, log_dir=log_dir) as cluster:
        sc = cluster.start()
        cluster.submit_topology(name, conf, topology)
        time.sleep(warmup_s)
        before, t0 = cluster.get_topology_info(name), time.monotonic()
        time.sleep(duration_s)
        after, t1 = cluster.get_topology_info(name), time.monotonic()
        worker_rss = sum(process_rss_mb(w["pid"]) for w in after["workers"])
        driver_rss = process_rss_mb(os.getpid())
        jvm_rss = process_rss_mb(_jvm_pid(sc))
        restarts = sum(w["restarts"] for w in after["workers"])
        cluster.kill_topology(name, wait_secs=0)
    elapsed = t1 - t0

    def delta(component: str, counter: str) -> int:
        return after["components"][component][counter] - before["components"][component][counter]

    sentences = delta(SPOUT, "acked")
    spout = after["components"][SPOUT]
    return {
        "workload": WORKLOAD,
        "system": SYSTEM,
        "acking": acking,
        "throughput_tps": sentences / elapsed,
        "words_per_s": delta(COUNT, "executed") / elapsed,
        "latency_p50_ms": spout["complete_latency_p50_ms"] if acking else None,
        "latency_p99_ms": spout["complete_latency_p99_ms"] if acking else None,
        "rss_mb": worker_rss,
        "driver_rss_mb": driver_rss,
        "jvm_rss_mb": jvm_rss,
        "duration_s": elapsed,
        "tuples": sentences,
        "failed": delta(SPOUT, "failed"),
        "errors": len(after["errors"]),
        "workers": workers,
        "worker_restarts": restarts,
        "master": master,
        "max_spout_pending": max_spout_pending if acking else None,
    }


if __name__ == "__main__":
    import json
    import sys

    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    for ack in (True, False):
        print(json.dumps(run(seconds, ack)), flush=True)
