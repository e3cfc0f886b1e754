"""bytewax: the workloads as bytewax dataflows (``python -m benchmarks.peers.bytewax SPEC``).

Run from the repository root in ``.bench/venvs/bytewax`` (``pip install bytewax``).

- wordcount (and latency, scaling): a ``DynamicSource`` cycles the sentences, stamped with
  ``perf_counter()`` at emit -> ``flat_map`` split -> ``key_on`` word -> ``stateful_map``
  count (emits ``(word, count)`` per word, as squall's count bolt) -> a ``DynamicSink``
  that counts words and takes the latency of each sentence's last word;
- pipeline: source -> ``map`` upper -> ``map`` exclaim -> ``map`` length -> sink;
- kafka-wordcount: the word count's operators with ``KafkaSource`` (the topic the harness
  filled, read from its start) in place of the test source, each record ``map``-ped to
  (stamp, sentence);
- iowait: source -> ``map`` that waits about 5 ms on the local delay server per sentence
  (``benchmarks.peers._delay``, the same server squall's variants wait on) -> sink.

One worker (``workers`` = 1) runs under ``bytewax.testing.run_main`` in this process;
N workers are N processes under ``bytewax.testing.cluster_main`` on 127.0.0.1 (bytewax
exchanges the keyed words between them). No recovery is configured, so there is no
per-record acking: a sentence counts as done when its words reach the sink. Sources stop
after the window (EOF), which ends the dataflow.
"""

from __future__ import annotations

import multiprocessing as mp
import socket
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
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

SYSTEM = "bytewax"
BATCH = 256  # sentences per next_batch when unpaced
SETTLE_S = Probe.FLUSH_SECS + 0.15


def build_flow(case: dict, probe_dir: str, start: float) -> Any:
    """The case's dataflow; its sources stop emitting after the measured window."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.inputs import DynamicSource, StatelessSourcePartition
    from bytewax.outputs import DynamicSink, StatelessSinkPartition

    window = Window(case["warmup_s"], case["duration_s"], start=start)
    stop_at = window.t1 + SETTLE_S
    rate = case.get("rate_tps")
    pipeline = case["workload"] in ("pipeline", "iowait")

    class Sentences(StatelessSourcePartition):
        def __init__(self, index: int, count: int) -> None:
            self.next_id = index
            self.interval = count / rate if rate else 0.0
            self.due = time.perf_counter()

        def next_batch(self) -> list:
            now = time.perf_counter()
            if now > stop_at:
                raise StopIteration
            n = BATCH
            if self.interval:
                n = min(BATCH, int((now - self.due) / self.interval) + 1) if now >= self.due else 0
                self.due += n * self.interval
            first = self.next_id
            self.next_id += n
            return [(now, sentence(i)) for i in range(first, first + n)]

        def next_awake(self) -> datetime | None:
            if not self.interval:
                return None
            wait = max(0.0, self.due - time.perf_counter())
            return datetime.now(UTC) + timedelta(seconds=wait)

    class Source(DynamicSource):
        def build(self, step_id: str, worker_index: int, worker_count: int) -> Sentences:
            return Sentences(worker_index, worker_count)

    class Counted(StatelessSinkPartition):
        def __init__(self, index: int) -> None:
            self.probe = Probe(probe_dir, f"w{index}-sink")

        def write_batch(self, items: list) -> None:
            now = time.perf_counter()
            probe = self.probe
            if pipeline:  # (stamp, value)
                for stamp, _ in items:
                    probe.latency(now, now - stamp)
            else:  # (word, (count, stamp)), the stamp on each sentence's last word only
                for _, (_, stamp) in items:
                    if stamp is not None:
                        probe.latency(now, now - stamp)
            probe.count(len(items))
            probe.maybe_flush()

        def close(self) -> None:
            self.probe.flush()

    class Sink(DynamicSink):
        def build(self, step_id: str, worker_index: int, worker_count: int) -> Counted:
            return Counted(worker_index)

    flow = Dataflow(f"bench_{case['workload'].replace('-', '_')}")
    if case["workload"] == "kafka-wordcount":
        stream = kafka_input(flow, case["params"])
    else:
        stream = op.input("sentences", flow, Source())
    if case["workload"] == "iowait":
        from benchmarks.peers._delay import DelayClient, start_server

        port = start_server()
        clients: dict[int, DelayClient] = {}

        def wait(x: tuple) -> tuple:
            client = clients.get(0)
            if client is None:
                client = clients[0] = DelayClient(port)
            client.ask()
            return x

        stream = op.map("wait", stream, wait)
    elif pipeline:
        for i, step in enumerate(PIPELINE_STEPS):
            stream = op.map(f"map{i + 1}", stream, lambda x, step=step: (x[0], step(x[1])))
    else:
        def words(x: tuple) -> list:
            parts = split(x[1])
            last = len(parts) - 1
            return [(w, x[0] if i == last else None) for i, w in enumerate(parts)]

        def count(state: int | None, stamp: float | None) -> tuple:
            n = (state or 0) + 1
            return n, (n, stamp)

        stream = op.flat_map("split", stream, words)
        keyed = op.key_on("key", stream, lambda x: x[0])
        keyed = op.map_value("drop_word", keyed, lambda x: x[1])
        stream = op.stateful_map("count", keyed, count)
    op.output("counted", stream, Sink())
    return flow


def kafka_input(flow: Any, params: dict) -> Any:
    """``KafkaSource`` from the start of the topic, as (stamp, sentence) items like ``Source``'s.

    ``tail=False``: the flow would end at each partition's end offset, after the window (the
    topic is sized for that); ``measure`` stops it after the window instead.
    """
    import bytewax.operators as op
    from bytewax.connectors.kafka import KafkaSource

    source = KafkaSource([params["bootstrap"]], [params["topic"]], tail=False,
                         add_config={"group.id": f"bytewax-{time.time_ns()}"})
    records = op.input("sentences", flow, source)
    return op.map("decode", records, lambda m: (time.perf_counter(), m.value.decode()))


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _cluster_worker(case: dict, probe_dir: str, start: float, addresses: list[str], index: int) -> None:
    from bytewax.testing import cluster_main

    cluster_main(build_flow(case, probe_dir, start), addresses, index)


def run_case(case: dict) -> dict[str, Any]:
    """Measure ``case``; its probe files live in a temporary directory, removed after."""
    with tempfile.TemporaryDirectory(prefix="bytewax-bench-", ignore_cleanup_errors=True) as probe_dir:
        return measure(case, probe_dir)


def measure(case: dict, probe_dir: str) -> dict[str, Any]:
    from bytewax.testing import run_main

    start = time.perf_counter()
    window = Window(case["warmup_s"], case["duration_s"], start=start)
    memory: dict[str, Any] = {}

    def sample_memory() -> None:
        window.sleep_until(window.t1)
        memory.update(tree_rss())

    sampler = threading.Thread(target=sample_memory, daemon=True)
    sampler.start()
    n = case["workers"]
    if case["workload"] == "kafka-wordcount":
        # KafkaSource reads to the topic's end, past the window: its process is stopped after
        # the window (the probes are files), rather than an operator added to stop it
        fork = mp.get_context("fork")
        proc = fork.Process(target=run_main, args=(build_flow(case, probe_dir, start),))
        proc.start()
        proc.join(max(0.0, window.t1 + SETTLE_S + 0.3 - time.perf_counter()))
        if proc.is_alive():
            proc.kill()
            proc.join()
    elif n == 1:
        run_main(build_flow(case, probe_dir, start))
    else:
        addresses = [f"127.0.0.1:{p}" for p in _free_ports(n)]
        fork = mp.get_context("fork")
        procs = [fork.Process(target=_cluster_worker, args=(case, probe_dir, start, addresses, i))
                 for i in range(n)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(case["warmup_s"] + case["duration_s"] + 60)
            if p.is_alive():
                p.kill()
    sampler.join()
    sink, latencies = read_probes(probe_dir, "-sink")
    row = base_row(case, SYSTEM)
    row.update(figures(case, window.t0, window.t1, sink=sink, latencies=latencies))
    row.update(memory)
    row["delivery"] = "none (no recovery configured)"
    row["memory_note"] = "this process (run_main)" if n == 1 else f"{n} cluster_main processes"
    row["versions"] = versions("bytewax")
    return row


def main() -> int:
    return serve(SYSTEM, run_case)


if __name__ == "__main__":
    raise SystemExit(main())
