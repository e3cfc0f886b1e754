"""raw: the same hops as a plain Python loop, no engine: the limit of Python + msgpack + ZeroMQ.

``python -m benchmarks.peers.raw SPEC`` (needs ``msgpack`` and ``pyzmq``). A case with
``workers`` = N runs N producer processes and N consumer processes, talking msgpack over
ZeroMQ PUSH/PULL sockets on 127.0.0.1:

- wordcount (and latency, scaling): a producer cycles the sentences and splits them (the
  spout and the split, one loop); it sends each word to consumer ``crc32(word) % N``
  (fields grouping) in batches of up to ``BATCH`` sentences; a consumer counts the words
  in a dict;
- pipeline: a producer runs the spout and the first map step, round-robins the values to
  the consumers, which run the second and third steps.

With ackers on, each consumer sends the ids of the sentences it finished back to their
producer, which completes a sentence when every consumer that got a part of it has acked,
and records emit -> ack latency; at most ``MAX_PENDING`` sentences are in flight per
producer (squall's ``max.spout.pending``). Without, ZeroMQ's high water marks are the
backpressure. A paced case (``rate_tps``) spreads the rate over the producers, which
flush their batches whenever they wait.
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
import time
import zlib
from typing import Any

from benchmarks.peers._common import (
    PIPELINE_STEPS,
    Window,
    base_row,
    sentence,
    serve,
    split,
    versions,
)
from benchmarks.peers._measure import (
    Probe,
    figures,
    read_probes,
    tree_rss,
)

SYSTEM = "raw"
BATCH = 64
MAX_PENDING = 500
SETTLE_S = Probe.FLUSH_SECS + 0.15


def _connect(ctx: Any, kind: int, ports: list[int]) -> list[Any]:
    """One socket of ``kind`` connected to each loopback port."""
    sockets = []
    for port in ports:
        sock = ctx.socket(kind)
        sock.connect(f"tcp://127.0.0.1:{port}")
        sockets.append(sock)
    return sockets


def _bind(ctx: Any, kind: int) -> tuple[Any, int]:
    sock = ctx.socket(kind)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    return sock, port


class Producer:
    """Spout + first step: emits sentences, batches them per consumer, takes acks."""

    def __init__(self, case: dict, index: int, probe_dir: str, conn: Any, stop: Any) -> None:
        import msgpack
        import zmq

        self.zmq, self.pack, self.unpack = zmq, msgpack.packb, msgpack.unpackb
        self.case, self.index, self.stop = case, index, stop
        self.ctx = zmq.Context()
        self.acks, port = _bind(self.ctx, zmq.PULL)
        conn.send(port)
        consumer_ports = conn.recv()
        self.outs = _connect(self.ctx, zmq.PUSH, consumer_ports)
        self.n = len(self.outs)
        self.probe = Probe(probe_dir, f"p{index}-spout")
        self.acking = bool(case["acking"])
        self.pending: dict[int, list] = {}  # sid -> [emit time, parts left]
        self.batches: list[list] = [[] for _ in self.outs]
        self.pipeline = case["workload"] == "pipeline"
        workers = case["workers"]
        self.interval = workers / case["rate_tps"] if case.get("rate_tps") else 0.0

    def flush(self) -> None:
        for target, batch in enumerate(self.batches):
            if batch:
                self.outs[target].send(self.pack([self.index, batch]))
                self.batches[target] = []

    def take_acks(self, timeout_ms: int) -> None:
        if not self.acks.poll(timeout_ms):
            return
        pending, probe = self.pending, self.probe
        while True:
            try:
                data = self.acks.recv(self.zmq.NOBLOCK)
            except self.zmq.Again:
                return
            now = time.perf_counter()
            for sid in self.unpack(data):
                entry = pending[sid]
                entry[1] -= 1
                if not entry[1]:
                    del pending[sid]
                    probe.latency(now, now - entry[0])
                    probe.count()

    def emit(self, sid: int) -> None:
        text = sentence(sid + self.index)
        if self.pipeline:
            target = sid % self.n
            self.batches[target].append([sid, PIPELINE_STEPS[0](text)])
            parts = 1
            targets = (target,)
        elif self.n == 1:
            self.batches[0].append([sid, split(text)])
            parts, targets = 1, (0,)
        else:
            groups: dict[int, list[str]] = {}
            for word in split(text):
                groups.setdefault(zlib.crc32(word.encode()) % self.n, []).append(word)
            for target, words in groups.items():
                self.batches[target].append([sid, words])
            parts, targets = len(groups), tuple(groups)
        if self.acking:
            self.pending[sid] = [time.perf_counter(), parts]
        else:
            self.probe.count()
        if any(len(self.batches[t]) >= BATCH for t in targets):
            self.flush()

    def run(self) -> None:
        sid = 0
        due = time.perf_counter()
        while not self.stop.is_set():
            if self.acking:
                self.take_acks(0)
                if len(self.pending) >= MAX_PENDING:
                    self.flush()
                    self.take_acks(1)
                    continue
            if self.interval:
                now = time.perf_counter()
                if due > now:
                    self.flush()
                    if self.acking:
                        self.take_acks(max(0, int((due - now) * 1000)))
                    else:
                        time.sleep(min(due - now, 0.001))
                    self.probe.maybe_flush()
                    continue
                due += self.interval
            self.emit(sid)
            sid += 1
        self.probe.flush()


class Consumer:
    """Count (or the last two map steps): takes batches, acks their sentences."""

    def __init__(self, case: dict, index: int, probe_dir: str, conn: Any, stop: Any) -> None:
        import msgpack
        import zmq

        self.zmq, self.pack, self.unpack = zmq, msgpack.packb, msgpack.unpackb
        self.case, self.stop = case, stop
        self.ctx = zmq.Context()
        self.pull, port = _bind(self.ctx, zmq.PULL)
        conn.send(port)
        producer_ports = conn.recv()
        self.acks = _connect(self.ctx, zmq.PUSH, producer_ports)
        self.probe = Probe(probe_dir, f"c{index}-sink")
        self.acking = bool(case["acking"])
        self.pipeline = case["workload"] == "pipeline"

    def run(self) -> None:
        counts: dict[str, int] = {}
        probe, unpack, acking = self.probe, self.unpack, self.acking
        upper_to_end = PIPELINE_STEPS[1:]
        while not self.stop.is_set():
            if not self.pull.poll(50):
                probe.maybe_flush()
                continue
            producer, items = unpack(self.pull.recv())
            if self.pipeline:
                for _sid, value in items:
                    for step in upper_to_end:
                        value = step(value)
                probe.count(len(items))
            else:
                n = 0
                for _sid, words in items:
                    for word in words:
                        counts[word] = counts.get(word, 0) + 1
                    n += len(words)
                probe.count(n)
            if acking:
                self.acks[producer].send(self.pack([sid for sid, _ in items]))
        probe.flush()


def _child(role: str, case: dict, index: int, probe_dir: str, conn: Any, stop: Any) -> None:
    cls = Producer if role == "producer" else Consumer
    cls(case, index, probe_dir, conn, stop).run()


def run_case(case: dict) -> dict[str, Any]:
    """Measure ``case``; its probe files live in a temporary directory, removed after."""
    with tempfile.TemporaryDirectory(prefix="raw-bench-", ignore_cleanup_errors=True) as probe_dir:
        return measure(case, probe_dir)


def measure(case: dict, probe_dir: str) -> dict[str, Any]:
    n = case["workers"]
    fork = mp.get_context("fork")
    stop = fork.Event()
    links: dict[str, list[Any]] = {"producer": [], "consumer": []}
    procs = []
    for role in ("consumer", "producer"):
        for i in range(n):
            parent, child = fork.Pipe()
            p = fork.Process(target=_child, args=(role, case, i, probe_dir, child, stop), daemon=True)
            p.start()
            procs.append(p)
            links[role].append(parent)
    consumer_ports = [c.recv() for c in links["consumer"]]
    producer_ports = [c.recv() for c in links["producer"]]
    for c in links["consumer"]:
        c.send(producer_ports)
    for c in links["producer"]:
        c.send(consumer_ports)
    window = Window(case["warmup_s"], case["duration_s"])
    window.sleep_until(window.t1)
    memory = tree_rss()
    window.sleep_until(window.t1 + SETTLE_S)
    stop.set()
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
    acked, latencies = read_probes(probe_dir, "-spout")
    sink, _ = read_probes(probe_dir, "-sink")
    row = base_row(case, SYSTEM)
    row.update(figures(case, window.t0, window.t1, sink=sink, acked=acked, latencies=latencies))
    row.update(memory)
    row["delivery"] = "acks back to the producer (no replay)" if case["acking"] else "none"
    row["memory_note"] = f"{n} producer + {n} consumer processes (+ the idle parent)"
    row["versions"] = versions("msgpack", "pyzmq")
    return row


def main() -> int:
    return serve(SYSTEM, run_case)


if __name__ == "__main__":
    raise SystemExit(main())
