"""How much of the word count crosses workers, and what a crossing costs: ``python -m benchmarks.crossing``.

    python -m benchmarks.crossing [--seconds 6] [--workers 2] [--instructions]

1. **On the cluster.** Runs the benchmark's word count (``benchmarks.workloads.wordcount``,
   ackers on, ``max.spout.pending`` 500, at its maximum rate) on ``SparkCluster``
   (``local[N]``) and reads, twice ``--seconds`` apart, what the running workers count
   (``get_topology_info``: each worker's ``transfer`` counters, ``Worker.transfer_stats``,
   sent with its heartbeats, and the components' ``transferred`` and ``acked``). Per
   completed sentence: tuples of the topology that crossed to another worker and that
   stayed local, acker messages that crossed, frames and bytes; load-aware, local-first
   shuffle and the scheduler's placement are as the benchmark has them.
2. **The cost.** Drives the same word count as ``benchmarks.opcodes`` (spout, split, two
   count tasks, workers in this thread on the in-process hub) on one worker (nothing
   crosses) and on ``--workers`` (what the placement makes cross), reads the same
   counters from those workers, and prints the CPU time per sentence of each (best of
   five; noisy on a shared machine) and, with ``--instructions``, callgrind's
   instructions per sentence (about two minutes). The difference, divided by the tuples
   that crossed, is what a crossing tuple costs over a local one (acking included: a
   crossing tuple's ack crosses too, combined with others in ``__ack_acks`` messages).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

TRANSFER_KEYS = ("frames", "bytes", "tuples", "acker", "early_sends", "rounds")


def _snapshot(info: dict[str, Any]) -> dict[str, float]:
    snap: dict[str, float] = {k: 0.0 for k in TRANSFER_KEYS}
    for w in info["workers"]:
        for k in TRANSFER_KEYS:
            snap[k] += float((w.get("transfer") or {}).get(k, 0))
    comps = info["components"]
    snap["transferred"] = float(sum(c.get("transferred", 0) for c in comps.values()))
    snap["acked"] = float(comps["sentence"].get("acked", 0))
    return snap


def per_sentence(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Per completed sentence, from two snapshots of the counters."""
    d = {k: after[k] - before[k] for k in after}
    n = d["acked"] or float("nan")
    return {
        "sentences": d["acked"],
        "crossing tuples": d["tuples"] / n,
        "local tuples": (d["transferred"] - d["tuples"]) / n,
        "crossing share": d["tuples"] / d["transferred"] if d["transferred"] else float("nan"),
        "crossing acker messages": d["acker"] / n,
        "frames": d["frames"] / n,
        "bytes": d["bytes"] / n,
        "bytes per crossing tuple": d["bytes"] / d["tuples"] if d["tuples"] else float("nan"),
        "tuples per frame": (d["tuples"] + d["acker"]) / d["frames"] if d["frames"] else float("nan"),
        "early sends per round": d["early_sends"] / d["rounds"] if d["rounds"] else float("nan"),
    }


def on_cluster(seconds: float, workers: int, warmup: float = 3.0,
               extra: dict[str, Any] | None = None) -> dict[str, float]:
    """Per-sentence crossing figures of the benchmark's word count on ``SparkCluster``."""
    from benchmarks.workloads.wordcount import squall_conf, topology
    from squall.spark import SparkCluster

    case = {"workers": workers, "acking": True, "params": {}}
    with tempfile.TemporaryDirectory(prefix="squall-crossing-") as d, \
            SparkCluster(master=f"local[{workers}]", log_dir=os.path.join(d, "logs")) as cluster:
        cluster.start()
        conf = squall_conf(case)
        conf.update(extra or {})
        cluster.submit_topology("crossing", conf, topology(d, workers))
        time.sleep(warmup)
        before = _snapshot(cluster.get_topology_info("crossing"))
        t0 = time.monotonic()
        time.sleep(seconds)
        after = _snapshot(cluster.get_topology_info("crossing"))
        elapsed = time.monotonic() - t0
        cluster.kill_topology("crossing", wait_secs=0)
    # the counters come with heartbeats (every second): the rate is as good as the window
    return {"sentences/s (heartbeat-grained)": (after["acked"] - before["acked"]) / elapsed,
            **per_sentence(before, after)}


def in_process(workers: int, sentences: int = 3000) -> dict[str, float]:
    """The same figures for ``benchmarks.opcodes``' word count driven in this thread."""
    from benchmarks import opcodes

    ws = opcodes.workers(workers, sentences, True)
    zero = {k: 0.0 for k in (*TRANSFER_KEYS, "transferred", "acked")}
    opcodes.drive(ws, sentences)
    after = dict(zero)
    for w in ws:
        for k in TRANSFER_KEYS:
            after[k] += w.transfer_stats().get(k, 0)
        after["transferred"] += sum(t.metrics.transferred for t in w.tasks.values())
    after["acked"] = float(sentences)
    return per_sentence(zero, after)


def _show(title: str, figures: dict[str, float]) -> None:
    print(title)
    for k, v in figures.items():
        print(f"    {k:26s} {v:12,.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.crossing",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions per sentence with callgrind (1 vs N workers)")
    parser.add_argument("--no-cluster", action="store_true", help="skip the SparkCluster run")
    parser.add_argument("--batch-time-ms", type=float, nargs="*", default=[],
                        help="run the cluster once with each squall.transfer.batch.time.ms")
    args = parser.parse_args(argv)
    from benchmarks import opcodes
    from squall import _speedups

    print(f"hot path: {_speedups.STATE}; load average {os.getloadavg()[0]:.1f}")
    variants: list[float | None] = list(args.batch_time_ms) or [None]
    for batch_ms in [] if args.no_cluster else variants:
        extra = {} if batch_ms is None else {"squall.transfer.batch.time.ms": batch_ms}
        load = os.getloadavg()[0]
        figures = on_cluster(args.seconds, args.workers, extra=extra)
        _show(f"word count on SparkCluster, {args.workers} workers, ackers on, max rate, "
              f"{args.seconds:g}s, batch time {'default' if batch_ms is None else batch_ms} ms, "
              f"load {load:.1f} (per completed sentence):", figures)
    driven = in_process(args.workers)
    _show(f"benchmarks.opcodes' word count, {args.workers} workers in this thread "
          "(per sentence):", driven)
    crossing = driven["crossing tuples"]
    one = opcodes.cpu_us(1, 3000, True)
    many = opcodes.cpu_us(args.workers, 3000, True)
    print(f"CPU per sentence (best of 5, load {os.getloadavg()[0]:.1f}): 1 worker {one:.1f} us, "
          f"{args.workers} workers {many:.1f} us: {(many - one) / crossing:+.2f} us per crossing "
          f"tuple ({crossing:.2f} crossing a sentence)")
    if args.instructions:
        i1, _ = opcodes.instructions_per_sentence(1, True)
        i2, _ = opcodes.instructions_per_sentence(args.workers, True)
        print(f"instructions per sentence: 1 worker {i1:,.0f}, {args.workers} workers {i2:,.0f}: "
              f"{(i2 - i1) / crossing:+,.0f} per crossing tuple")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
