"""Where a sentence's time goes, rung by rung, from the API to the cluster: ``python -m benchmarks.ladder``.

    python -m benchmarks.ladder [--workload wordcount pipeline] [--workers 2] [--seconds 5]
                                [--sentences N] [--repeat 3] [--no-cluster]

Every rung runs the benchmark's own components (``benchmarks/workloads/components.py``),
acked, and gives microseconds of one core per completed sentence:

1. **API**: Storm's API calls alone with a free engine (``benchmarks.floor``): the cost no
   engine that calls these components can avoid.
2. **one worker, this thread**: squall's engine with every task in one worker, driven in
   this thread (``Worker.run_once``): routing, tuples, acking, chaining; nothing crosses.
3. **N workers, this thread**: the same N workers the cluster runs, driven in this thread
   on the in-process hub: what crosses to another worker is packed, framed and unpacked.
4. **squall-spark**: the topology on ``SparkCluster`` (``local[N]``), the CPU of the workers'
   processes (every thread: the loop, ZeroMQ's I/O thread, the kernel's work for them) per
   acked sentence, with the cores they used and the rate they reached.

Each rung's "ceiling" is the rate ``--workers`` cores would reach at its cost with nothing
idle, and "API ÷" the share of the API's cost in it: issue 40's ratios to the floor are
the last rung's measured rate over the first rung's ceiling. The gaps between rungs say
where the rest goes: the engine inside a worker, the crossing between workers, and running
as processes on shared cores (idle included: the last rung's ceiling over its rate).
In-thread rungs are the best of ``--repeat`` timings of ``--sentences`` sentences, in this
process's CPU time as ``benchmarks.floor``'s (a process sharing the core does not lengthen
them; it still slows them through the caches: run it on an idle machine).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

from benchmarks import floor

WORKLOADS = ("wordcount", "pipeline")
API = {"wordcount": floor.wordcount_api, "pipeline": floor.pipeline_api}


def build(workload: str, workers: int, probe_dir: str) -> tuple[Any, Any]:
    """The benchmark's topology and conf for ``workload`` on ``workers`` workers, acked."""
    case = {"workers": workers, "acking": True, "params": {}}
    if workload == "pipeline":
        from benchmarks.workloads.pipeline import build as build_pipeline

        return build_pipeline(case, probe_dir)
    from benchmarks.workloads.wordcount import squall_conf, topology

    return topology(probe_dir, workers), squall_conf(case)


def in_thread(workload: str, workers: int, sentences: int, repeat: int,
              warmup: int = 2000) -> float:
    """Best microseconds per acked sentence of ``workers`` workers driven in this thread."""
    from benchmarks.opcodes import open_workers

    with tempfile.TemporaryDirectory(prefix="squall-ladder-") as probe_dir:
        topology, conf = build(workload, workers, probe_dir)
        ws = open_workers(topology, conf, workers, "ladder")
        spouts = [s for w in ws for s in w.spouts if s.component == "sentence"]

        def acked() -> int:
            return sum(s.metrics.acked for s in spouts)

        def until(target: int) -> None:
            while acked() < target:
                for w in ws:
                    w.run_once()

        until(warmup)
        best = float("inf")
        for _ in range(repeat):
            start = acked()
            t0 = floor.CPU_CLOCK()
            until(start + sentences)
            best = min(best, (floor.CPU_CLOCK() - t0) / (acked() - start))
    return best * 1e6


def api_us(workload: str, sentences: int, repeat: int) -> float:
    """Best microseconds per sentence of the API's calls alone (``benchmarks.floor``)."""
    with tempfile.TemporaryDirectory(prefix="squall-ladder-") as probe_dir:
        return floor.best_us(lambda: API[workload](sentences, probe_dir)[0], sentences, repeat)


def on_cluster(workload: str, workers: int, seconds: float, warmup: float = 3.0) -> dict[str, float]:
    """Rate, cores used and CPU microseconds per acked sentence on ``SparkCluster``."""
    from benchmarks.peers._measure import read_probes
    from benchmarks.scale_data import cpu_secs
    from benchmarks.spread import wait_running
    from squall.spark import SparkCluster

    def acked(probe_dir: str) -> float:
        series, _ = read_probes(probe_dir, "-spout")
        return sum(s[-1][1] for s in series if s)

    with tempfile.TemporaryDirectory(prefix="squall-ladder-") as probe_dir, \
            SparkCluster(master=f"local[{workers}]", log_dir=os.path.join(probe_dir, "logs")) as cluster:
        cluster.start()
        topology, conf = build(workload, workers, probe_dir)
        cluster.submit_topology("ladder", conf, topology)
        try:
            info = wait_running(cluster, "ladder", workers)
            pids = [w["pid"] for w in info["workers"] if w.get("pid")]
            time.sleep(warmup)
            cpu0, done0, t0 = sum(cpu_secs(p) for p in pids), acked(probe_dir), time.monotonic()
            time.sleep(seconds)
            cpu1, done1, t1 = sum(cpu_secs(p) for p in pids), acked(probe_dir), time.monotonic()
        finally:
            cluster.kill_topology("ladder", wait_secs=0)
    done = done1 - done0
    if done <= 0:
        raise RuntimeError(f"ladder: no {workload} sentence was acked on the cluster in {seconds:g}s")
    return {"rate": done / (t1 - t0), "cores": (cpu1 - cpu0) / (t1 - t0),
            "us": (cpu1 - cpu0) / done * 1e6}


def rungs(workload: str, workers: int, sentences: int, repeat: int, seconds: float,
          cluster: bool) -> list[dict[str, Any]]:
    """The ladder of one workload: a row per rung (``rung``, ``us``, and the cluster's extras)."""
    rows: list[dict[str, Any]] = [
        {"rung": "API calls, free engine", "us": api_us(workload, sentences, repeat)},
        {"rung": "squall, 1 worker, this thread", "us": in_thread(workload, 1, sentences, repeat)},
    ]
    if workers > 1:
        rows.append({"rung": f"squall, {workers} workers, this thread",
                     "us": in_thread(workload, workers, sentences, repeat)})
    if cluster:
        got = on_cluster(workload, workers, seconds)
        rows.append({"rung": f"squall-spark, local[{workers}]", "us": got["us"],
                     "rate": got["rate"], "cores": got["cores"]})
    return rows


def table(workload: str, rows: list[dict[str, Any]], cores: int) -> list[str]:
    """The rows as printed: cost, its multiple of the API's, the ceiling, the API's share."""
    api = rows[0]["us"]
    lines = [f"{'workload':<10} {'rung':<32} {'us/sent':>8} {'x API':>6} "
             f"{f'ceiling, {cores} cores':>16} {'API ÷':>6}  measured"]
    for row in rows:
        measured = ""
        if "rate" in row:
            measured = (f"{row['rate']:,.0f}/s on {row['cores']:.2f} cores = "
                        f"{row['rate'] * api / (cores * 1e6):.2f} of the API's ceiling")
        lines.append(f"{workload:<10} {row['rung']:<32} {row['us']:>8.2f} {row['us'] / api:>6.2f} "
                     f"{cores * 1e6 / row['us']:>16,.0f} {api / row['us']:>6.2f}  {measured}")
    steps = [f"{b['rung']} {b['us'] - a['us']:+.2f} us" for a, b in zip(rows, rows[1:], strict=False)]
    lines.append(f"{'':<10} steps: " + "; ".join(steps))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ladder",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workload", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0, help="the cluster rung's measured window")
    parser.add_argument("--sentences", type=int, default=50_000, help="per in-thread timing")
    parser.add_argument("--repeat", type=int, default=3, help="in-thread timings; the best is kept")
    parser.add_argument("--no-cluster", action="store_true", help="skip the SparkCluster rung")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.sentences < 1 or args.repeat < 1 or args.seconds <= 0:
        parser.error("--workers, --sentences and --repeat must be at least 1, --seconds above 0")
    from squall import _speedups

    print(f"hot path: {_speedups.STATE}; load average {os.getloadavg()[0]:.1f}")
    for workload in args.workload:
        rows = rungs(workload, args.workers, args.sentences, args.repeat, args.seconds,
                     not args.no_cluster)
        print("\n".join(table(workload, rows, args.workers)))
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
