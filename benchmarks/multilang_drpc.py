"""Multilang and DRPC figures: ``python -m benchmarks.multilang_drpc [--seconds S]``.

1. Throughput (sentences per second, acked end to end) of a split bolt written natively,
   as a pystorm ``ShellBolt`` (JSON and msgpack) and as a Node.js ``ShellBolt``, each in
   the same topology on ``LocalCluster``: spout -> split (2 tasks) -> count (2 tasks).
2. DRPC request latency (p50, p99, ms) of the reach topology through a ``LocalDRPC`` and
   through a ``squall drpc`` server (HTTP, token) on 127.0.0.1, one request at a time.

Prints a table and writes ``benchmarks/results/multilang-drpc.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from squall import BasicBolt, Bolt, Config, Fields, LocalCluster, Spout, TopologyBuilder
from squall.drpc import DRPCClient, DRPCServer, LocalDRPC
from squall.multilang import ShellBolt

RESULTS = Path(__file__).resolve().parent / "results"
RESOURCES = str(Path(__file__).resolve().parents[1] / "tests" / "multilang" / "resources")
SENTENCE = "the quick brown fox jumps over the lazy dog"
_acked = [0]
_lock = threading.Lock()


class SentenceSpout(Spout):
    """Emits the same sentence forever with msg ids (replays nothing: failures are counted)."""

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector, self.n = collector, 0

    def next_tuple(self) -> None:
        self.n += 1
        self.collector.emit([self.n, SENTENCE], msg_id=self.n)

    def ack(self, msg_id: Any) -> None:
        with _lock:
            _acked[0] += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "sentence"))


class NativeSplit(BasicBolt):
    """The split bolt, in Python, in the worker."""

    def execute(self, tup: Any, collector: Any) -> None:
        for pos, word in enumerate(tup[1].split()):
            collector.emit([word, tup[0], pos])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "id", "pos"))


class Count(Bolt):
    """Acks every word."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


def _splits() -> dict[str, tuple[Any, dict]]:
    out: dict[str, tuple[Any, dict]] = {"native": (NativeSplit(), {})}
    fields = {"default": Fields("word", "id", "pos")}
    for ser in ("json", "msgpack"):
        out[f"pystorm-{ser}"] = (ShellBolt([sys.executable, "pystorm_wordpos.py", ser],
                                           resources=RESOURCES, outputs=fields),
                                 {"topology.multilang.serializer": ser})
    if shutil.which("node"):
        out["node"] = (ShellBolt(["node", "wordpos.js"], resources=RESOURCES, outputs=fields), {})
    return out


def throughput(name: str, split: Any, extra: dict, warmup: float, seconds: float) -> dict:
    b = TopologyBuilder()
    b.set_spout("spout", SentenceSpout(), 1)
    b.set_bolt("split", split, 2).shuffle_grouping("spout")
    b.set_bolt("count", Count(), 2).shuffle_grouping("split")
    conf = Config()
    conf.set_num_workers(1)
    conf.set_max_spout_pending(1000)
    conf["topology.shellbolt.max.pending"] = 200
    conf.update(extra)
    with LocalCluster() as cluster:
        cluster.submit_topology("bench", conf, b.create_topology())
        time.sleep(warmup)
        start, before = time.monotonic(), _acked[0]
        time.sleep(seconds)
        rate = (_acked[0] - before) / (time.monotonic() - start)
    return {"case": "split throughput", "variant": name, "sentences_per_s": round(rate, 1)}


def drpc_latency(kind: str, requests: int) -> dict:
    from examples.drpc_reach import builder

    times: list[float] = []
    conf = Config()
    conf.set_num_workers(2)
    if kind == "LocalDRPC":
        with LocalDRPC() as drpc, LocalCluster() as cluster:
            cluster.submit_topology("reach", conf, builder().create_local_topology(drpc))
            call = drpc.execute
            _measure(call, requests, times)
    else:
        token = "benchmark-token"
        with DRPCServer(token, port=0) as srv, LocalCluster() as cluster:
            conf.update({"drpc.servers": ["127.0.0.1"], "drpc.port": srv.port, "squall.drpc.token": token})
            cluster.submit_topology("reach", conf, builder().create_remote_topology())
            client = DRPCClient("127.0.0.1", srv.port, token=token)
            _measure(lambda f, a: client.execute(f, a, timeout=30), requests, times)
    qs = statistics.quantiles(times, n=100)
    return {"case": "DRPC reach latency", "variant": kind, "requests": len(times),
            "p50_ms": round(qs[49], 2), "p99_ms": round(qs[98], 2)}


def _measure(call: Any, requests: int, times: list[float]) -> None:
    for _ in range(20):  # warm-up
        call("reach", "foo.com/blog/1")
    for i in range(requests):
        t0 = time.perf_counter()
        call("reach", ["foo.com/blog/1", "tech.backtype.com/blog/123"][i % 2])
        times.append((time.perf_counter() - t0) * 1000.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.multilang_drpc",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per throughput case")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--requests", type=int, default=500, help="DRPC requests per latency case")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = [throughput(name, split, extra, args.warmup, args.seconds)
            for name, (split, extra) in _splits().items()]
    native = rows[0]["sentences_per_s"] or 1.0
    for row in rows:
        row["vs_native"] = round(row["sentences_per_s"] / native, 3)
    rows += [drpc_latency(kind, args.requests) for kind in ("LocalDRPC", "squall drpc (HTTP)")]
    for row in rows:
        figures = {k: v for k, v in row.items() if k not in ("case", "variant")}
        print(f"{row['case']:<20} {row['variant']:<20} " + "  ".join(f"{k}={v}" for k, v in figures.items()))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "multilang-drpc.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    # run from the importable module, so that its components pickle by reference
    from benchmarks.multilang_drpc import main as _main

    sys.exit(_main())
