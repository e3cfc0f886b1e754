"""pyflink: the workloads as PyFlink DataStream jobs on a local mini-cluster.

``python -m benchmarks.peers.pyflink SPEC``, run from the repository root in
``.bench/venvs/pyflink`` (``pip install apache-flink``; needs Java 11+). Every step is a
Python UDF, run by Flink's Python workers (process mode):

- wordcount (and scaling): ``NumberSequenceSource`` (JVM) -> ``map`` to the cycled
  sentence, stamped with ``perf_counter()`` -> ``flat_map`` split -> ``key_by`` word ->
  ``KeyedProcessFunction`` counting in a ``ValueState`` (Flink's keyed state), which also
  counts the words and takes each sentence's latency at its last word;
- pipeline: source -> ``map`` upper -> ``map`` exclaim -> ``map`` length (+ count);
- latency: the word count fed by Flink's ``datagen`` table source at ``rate_tps`` rows/s.

The counting functions write ``Probe`` files (``_common``), so the figures are taken as
for squall. ``workers`` = N is the job's parallelism. Latencies start at the first Python
step's stamp, so they leave out the JVM source's hand-off to Python (in pyflink's favour).
Latency cases shorten Flink's Python bundles and network buffer timeout (``LATENCY_CONF``),
its knobs for latency; throughput cases keep Flink's defaults. Checkpointing is off, so
there is no replay: a sentence is done when counted.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

from benchmarks.peers._common import (
    PIPELINE_STEPS,
    Window,
    base_row,
    log,
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

SYSTEM = "pyflink"
SETTLE_S = Probe.FLUSH_SECS + 0.15
FIRST_OUTPUT_TIMEOUT_S = 120.0
LATENCY_CONF = {"python.fn-execution.bundle.time": "5", "python.fn-execution.bundle.size": "1000"}
LATENCY_BUFFER_TIMEOUT_MS = 5


def build_job(case: dict, probe_dir: str) -> Any:
    """The case's StreamExecutionEnvironment, with its dataflow defined."""
    from pyflink.common import Configuration, Types, WatermarkStrategy
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource
    from pyflink.datastream.functions import FlatMapFunction, KeyedProcessFunction, MapFunction
    from pyflink.datastream.state import ValueStateDescriptor
    from pyflink.table import StreamTableEnvironment

    conf = Configuration()
    conf.set_string("python.executable", sys.executable)
    conf.set_string("python.client.executable", sys.executable)
    conf.set_string("python.pythonpath", os.getcwd())  # the UDFs import benchmarks.peers._common
    rate = case.get("rate_tps")
    if rate:
        for key, value in LATENCY_CONF.items():
            conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(case["workers"])
    if rate:
        env.set_buffer_timeout(LATENCY_BUFFER_TIMEOUT_MS)

    class Sentences(MapFunction):
        """Turns each source record into the next sentence of the cycle, stamped."""

        def open(self, runtime_context: Any) -> None:
            self.next = runtime_context.get_index_of_this_subtask()

        def map(self, _record: Any) -> tuple:
            self.next += 1
            return sentence(self.next), time.perf_counter()

    class Split(FlatMapFunction):
        def flat_map(self, value: tuple) -> Any:
            words = split(value[0])
            last = len(words) - 1
            for i, word in enumerate(words):
                yield word, value[1] if i == last else -1.0

    class Count(KeyedProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
            index = runtime_context.get_index_of_this_subtask()
            self.probe = Probe(probe_dir, f"s{index}-{os.getpid()}-sink")

        def process_element(self, value: tuple, ctx: Any) -> Any:
            n = (self.count.value() or 0) + 1
            self.count.update(n)
            if value[1] >= 0:
                now = time.perf_counter()
                self.probe.latency(now, now - value[1])
            self.probe.count()
            return iter(())  # (word, n) goes nowhere, as squall's count emits to no one

        def close(self) -> None:
            self.probe.flush()

    class Last(MapFunction):
        """The pipeline's last step, counting what it maps."""

        def open(self, runtime_context: Any) -> None:
            index = runtime_context.get_index_of_this_subtask()
            self.probe = Probe(probe_dir, f"s{index}-{os.getpid()}-sink")

        def map(self, value: tuple) -> int:
            now = time.perf_counter()
            self.probe.latency(now, now - value[1])
            self.probe.count()
            return PIPELINE_STEPS[-1](value[0])

        def close(self) -> None:
            self.probe.flush()

    if rate:  # Flink's datagen source paces itself (rows-per-second for the whole source)
        tables = StreamTableEnvironment.create(env)
        tables.execute_sql(
            "CREATE TABLE paced (id BIGINT) WITH ('connector' = 'datagen', "
            f"'rows-per-second' = '{max(1, round(rate))}', 'fields.id.kind' = 'random')")
        records = tables.to_data_stream(tables.from_path("paced"))
    else:
        records = env.from_source(NumberSequenceSource(0, 2**62), WatermarkStrategy.no_watermarks(),
                                  "numbers")
    pair = Types.TUPLE([Types.STRING(), Types.DOUBLE()])
    stamped = records.map(Sentences(), output_type=pair)
    if case["workload"] == "pipeline":
        stream = stamped
        for step in PIPELINE_STEPS[:-1]:
            stream = stream.map(lambda v, step=step: (step(v[0]), v[1]), output_type=pair)
        out = stream.map(Last(), output_type=Types.INT()).filter(lambda v: False)
    else:
        words = stamped.flat_map(Split(), output_type=pair)
        out = words.key_by(lambda v: v[0], key_type=Types.STRING()).process(Count(), output_type=pair)
    out.print()  # never prints: a sink, so that the job has one
    return env


def run_case(case: dict) -> dict[str, Any]:
    """Measure ``case``; its probe files live in a temporary directory, removed after."""
    with tempfile.TemporaryDirectory(prefix="pyflink-bench-", ignore_cleanup_errors=True) as probe_dir:
        return measure(case, probe_dir)


def measure(case: dict, probe_dir: str) -> dict[str, Any]:
    env = build_job(case, probe_dir)
    client = env.execute_async(f"bench-{case['workload']}")
    try:
        # the warm-up starts once the first counts come out (squall's starts when submit
        # returns): starting the mini-cluster and the Python workers takes seconds
        deadline = time.perf_counter() + FIRST_OUTPUT_TIMEOUT_S
        while time.perf_counter() < deadline and not any(s for s in read_probes(probe_dir, "-sink")[0]):
            if str(client.get_job_status().result()) in ("JobStatus.FAILED", "JobStatus.CANCELED"):
                break
            time.sleep(0.1)
        window = Window(case["warmup_s"], case["duration_s"])
        window.sleep_until(window.t1)
        memory = tree_rss()
        window.sleep_until(window.t1 + SETTLE_S)
        status = str(client.get_job_status().result())
    finally:
        try:
            client.cancel().result()
        except Exception as e:  # noqa: BLE001 - a failed job cannot be cancelled
            log(f"cancel: {e}")
    sink, latencies = read_probes(probe_dir, "-sink")
    if not any(sink):
        raise RuntimeError(f"the job produced nothing (status {status}); see pyflink's log")
    row = base_row(case, SYSTEM)
    row.update(figures(case, window.t0, window.t1, sink=sink, latencies=latencies))
    row.update(memory)
    row["delivery"] = "none (checkpointing off)"
    row["memory_note"] = "client Python + mini-cluster JVM + Python UDF workers"
    row["flink_conf"] = LATENCY_CONF if case.get("rate_tps") else "defaults"
    row["versions"] = versions("apache-flink")
    return row


def main() -> int:
    return serve(SYSTEM, run_case)


if __name__ == "__main__":
    raise SystemExit(main())
