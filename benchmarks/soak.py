"""Memory under sustained load: word count with acking on SparkCluster, worker RSS over time.

    python -m benchmarks.soak --minutes 5

Prints one line per sample (elapsed, sentences acked/s over the interval, each worker's
resident memory) and the growth of each worker's RSS from the first sample after warm-up
to the last.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from squall import Config


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def main(argv: list[str] | None = None) -> int:
    """Run the soak and print the samples."""
    from examples.word_count import build_topology
    from squall.spark import SparkCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(500)
    with SparkCluster(master=args.master) as cluster:
        cluster.submit_topology("soak", conf, build_topology())
        time.sleep(10)  # warm-up
        first: dict[int, float] = {}
        last_acked, last_t = None, time.monotonic()
        end = time.monotonic() + args.minutes * 60
        while True:
            info = cluster.get_topology_info("soak")
            acked = info["components"]["sentence"]["acked"]
            now = time.monotonic()
            rate = (acked - last_acked) / (now - last_t) if last_acked is not None else 0.0
            last_acked, last_t = acked, now
            rss = {w["worker"]: rss_mb(w["pid"]) for w in info["workers"]}
            for w, mb in rss.items():
                first.setdefault(w, mb)
            cells = "  ".join(f"worker {w}: {mb:6.1f} MB" for w, mb in sorted(rss.items()))
            print(f"{args.minutes * 60 - (end - now):6.0f}s  {rate:9,.0f} sentences/s  {cells}",
                  flush=True)
            if now >= end:
                break
            time.sleep(min(args.every, max(0.0, end - now)))
        cluster.kill_topology("soak", wait_secs=0)
    for w, mb in sorted(rss.items()):
        print(f"worker {w}: {first[w]:.1f} MB -> {mb:.1f} MB ({mb - first[w]:+.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
