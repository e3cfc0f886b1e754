"""Word count on ``LocalCluster``: sentences acked per second, with ackers on and off.

The topology is :func:`examples.word_count.build_topology` (endless random sentences,
split, fields-grouped count). A run submits it, lets it warm up, then measures the change of
the counters in ``get_topology_info`` over a fixed duration:

* throughput: sentences acked by the spout per second (with ackers off the spout acks
  each sentence as soon as it is emitted), and words counted per second;
* latency: the spout's complete latency p50/p99 as ``get_topology_info`` reports it (with
  ackers on only; there is no tuple tree to complete otherwise);
* rss_mb: this process's resident memory at the end of the measurement.
"""

from __future__ import annotations

import resource
import time
from typing import Any

from examples import _results
from examples.word_count import build_topology
from squall import Config, LocalCluster

WORKLOAD = "wordcount"
SYSTEM = "squall-local"
SPOUT, COUNT = "sentence", "count"


def rss_mb() -> float:
    """Resident memory of this process now (peak on systems without ``/proc``), in MB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux


def run(*, acking: bool, duration_s: float = 20.0, warmup_s: float = 5.0, workers: int = 2,
        max_spout_pending: int = 500, spouts: int = 5, splitters: int = 8,
        counters: int = 12) -> dict[str, Any]:
    """One measurement; returns a result row (see ``benchmarks.__main__``).

    With ``acking``, ``topology.max.spout.pending`` is ``max_spout_pending`` per spout task;
    without, ``topology.acker.executors`` is 0 and only backpressure slows the spouts.
    """
    conf = Config()
    conf.set_num_workers(workers)
    if acking:
        conf.set_max_spout_pending(max_spout_pending)
    else:
        conf.set_num_ackers(0)
    topology = build_topology(spouts=spouts, splitters=splitters, counters=counters)
    name = f"bench-{WORKLOAD}-{'ack' if acking else 'noack'}"
    _results.reset(name)
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology(name, conf, topology)
            time.sleep(warmup_s)
            before, t0 = cluster.get_topology_info(name), time.monotonic()
            time.sleep(duration_s)
            after, t1 = cluster.get_topology_info(name), time.monotonic()
            rss = rss_mb()
            cluster.kill_topology(name)
    finally:
        _results.reset(name)
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
        "rss_mb": rss,
        "duration_s": elapsed,
        "tuples": sentences,
        "failed": delta(SPOUT, "failed"),
        "errors": len(after["errors"]),
        "workers": workers,
        "max_spout_pending": max_spout_pending if acking else None,
    }
