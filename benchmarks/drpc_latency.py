"""DRPC request latency: ``python -m benchmarks.drpc_latency [--requests N]``.

Storm's reach topology (``examples/drpc_reach.py``, two workers on ``LocalCluster``)
answers requests one at a time, through a ``LocalDRPC`` and through a ``squall drpc``
server (HTTP with a token) on 127.0.0.1. Prints p50, p99 and max in milliseconds and
writes ``benchmarks/results/drpc-latency.json``. (A multilang bolt's throughput beside the
native one is the ``multilang`` workload of ``python -m benchmarks``.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from squall import Config, LocalCluster
from squall.drpc import DRPCClient, DRPCServer, LocalDRPC

RESULTS = Path(__file__).resolve().parent / "results"
URLS = ["foo.com/blog/1", "engineering.twitter.com/blog/5", "tech.backtype.com/blog/123"]


def drpc_latency(kind: str, requests: int) -> dict:
    """Latency figures of ``requests`` sequential reach calls through ``kind``."""
    from examples.drpc_reach import builder

    conf = Config()
    conf.set_num_workers(2)
    if kind == "LocalDRPC":
        with LocalDRPC() as drpc, LocalCluster() as cluster:
            cluster.submit_topology("reach", conf, builder().create_local_topology(drpc))
            times = _measure(drpc.execute, requests)
    else:
        token = "benchmark-token"
        with DRPCServer(token, port=0) as srv, LocalCluster() as cluster:
            conf.update({"drpc.servers": ["127.0.0.1"], "drpc.port": srv.port, "squall.drpc.token": token})
            cluster.submit_topology("reach", conf, builder().create_remote_topology())
            client = DRPCClient("127.0.0.1", srv.port, token=token)
            times = _measure(lambda f, a: client.execute(f, a, timeout=30), requests)
    qs = statistics.quantiles(times, n=100)
    return {"workload": "drpc reach", "variant": kind, "requests": len(times),
            "p50_ms": round(qs[49], 2), "p99_ms": round(qs[98], 2), "max_ms": round(max(times), 2)}


def _measure(call: Callable[[str, str], str], requests: int) -> list[float]:
    for url in URLS * 5:  # warm-up
        call("reach", url)
    times = []
    for i in range(requests):
        t0 = time.perf_counter()
        call("reach", URLS[i % len(URLS)])
        times.append((time.perf_counter() - t0) * 1000.0)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.drpc_latency",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500, help="requests per case")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = [drpc_latency(kind, args.requests) for kind in ("LocalDRPC", "squall drpc (HTTP)")]
    for row in rows:
        print(f"{row['workload']:<12} {row['variant']:<20} requests={row['requests']}  "
              f"p50={row['p50_ms']} ms  p99={row['p99_ms']} ms  max={row['max_ms']} ms")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "drpc-latency.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
