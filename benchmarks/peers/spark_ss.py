"""spark-ss: the workloads as PySpark Structured Streaming queries (micro-batches).

``python -m benchmarks.peers.spark_ss SPEC``, run from the repository root in
``.bench/venvs/spark-ss`` (``pip install pyspark``). Each step is what a Spark user writes,
Spark SQL built-ins that run in the JVM (no Python per record):

- wordcount (and scaling): the cycled sentence ``element_at(sentences, value % 5 + 1)`` ->
  ``explode(split(sentence, " "))`` -> ``groupBy("word").count()``, a stateful streaming
  aggregation (update mode, state checkpointed every micro-batch) -> ``foreachBatch``;
- pipeline: ``upper`` -> ``concat(..., "!")`` -> ``length``, summed at the sink so that
  nothing is pruned;
- latency: the word count fed by the ``rate`` source at ``rate_tps`` rows/s.

Throughput cases read the ``rate-micro-batch`` source (a fixed ``ROWS_PER_BATCH`` per
micro-batch, as fast as batches complete): a row is done when the batch holding it has
been through the sink. Latency cases read the ``rate`` source, whose rows carry their
generation time; for every row of a batch the latency is the sink's wall clock minus that
time (each batch covers the values after the previous batch's largest, and their times
are interpolated between the two batches' largest timestamps, as the rate source spaces
them evenly). ``workers`` = N runs ``local[N]`` with N shuffle partitions. The warm-up
starts after ``STEADY_BATCHES`` micro-batches, and the process's first query warms up
``JVM_WARMUP_S`` longer (with a cold JIT, its batches took twice as long for some 30 s).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

from benchmarks.peers._common import (
    SENTENCES,
    WORDS_PER_SENTENCE,
    Window,
    base_row,
    serve,
    versions,
)
from benchmarks.peers._measure import (
    Latencies,
    figures,
    tree_rss,
)

SYSTEM = "spark-ss"
ROWS_PER_BATCH = 200_000  # sentences per micro-batch in throughput cases
FIRST_BATCH_TIMEOUT_S = 120.0
STEADY_BATCHES = 3  # micro-batches through before the warm-up clock starts
JVM_WARMUP_S = 20.0  # more warm-up for the first query of the process: the JIT is cold


class Session:
    """One SparkSession at a time, restarted when a case needs another ``local[N]``."""

    def __init__(self) -> None:
        self.spark: Any = None
        self.workers: int | None = None
        self.queries = 0  # queries run so far (the JVM outlives a session: its JIT stays warm)

    def get(self, workers: int) -> Any:
        if self.spark is not None and self.workers == workers:
            return self.spark
        if self.spark is not None:
            self.spark.stop()
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession

        self.spark = (
            SparkSession.builder.master(f"local[{workers}]").appName("bench-spark-ss")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", str(workers))
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        self.spark.sparkContext.setLogLevel("ERROR")
        self.workers = workers
        return self.spark


class Sink:
    """The ``foreachBatch`` function: counts completed rows and takes their latencies."""

    def __init__(self, case: dict) -> None:
        self.pipeline = case["workload"] == "pipeline"
        self.paced = bool(case.get("rate_tps"))
        self.progress: list[tuple[float, float]] = []
        self.latencies = Latencies()
        self.done = 0.0  # sink units: words, or pipeline values
        self.counts: dict[str, int] = {}
        self.last: tuple[float, float] | None = None  # (largest value, its time) so far

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        if self.pipeline:
            row = batch.agg(F.count("*").alias("n"), F.sum("len").alias("chars"),
                            F.max("value").alias("max_value"),
                            F.max("ts").alias("max_ts")).collect()[0]
            units = row["n"]
            top = (row["max_value"], row["max_ts"])
        else:
            rows = batch.collect()  # one row per word seen in the batch: a few dozen
            units = 0
            for r in rows:
                units += r["count"] - self.counts.get(r["word"], 0)
                self.counts[r["word"]] = r["count"]
            top = (max((r["max_value"] for r in rows), default=None),
                   max((r["max_ts"] for r in rows), default=None))
        now, wall = time.perf_counter(), time.time()
        self.done += units
        self.progress.append((now, self.done))
        if top[0] is None:
            return
        if self.paced and self.last is not None:
            self._latencies(now, wall, self.last, top)
        self.last = top

    def _latencies(self, now: float, wall: float, last: tuple, top: tuple) -> None:
        (v0, t0), (v1, t1) = last, top
        n = int(v1 - v0)
        step = (t1 - t0) / n if n > 0 else 0.0
        for k in range(1, n + 1):
            self.latencies.add(now, wall - (t0 + k * step))


def build_query(spark: Any, case: dict, sink: Sink, checkpoint: str) -> Any:
    from pyspark.sql import functions as F

    n = case["workers"]
    if case.get("rate_tps"):
        source = (spark.readStream.format("rate").option("rowsPerSecond", str(int(case["rate_tps"])))
                  .option("numPartitions", str(n)).load())
    else:
        source = (spark.readStream.format("rate-micro-batch")
                  .option("rowsPerBatch", str(ROWS_PER_BATCH)).option("numPartitions", str(n)).load())
    sentences = F.array(*[F.lit(s) for s in SENTENCES])
    df = source.select(
        "value", F.col("timestamp").cast("double").alias("ts"),
        F.element_at(sentences, (F.col("value") % len(SENTENCES) + 1).cast("int")).alias("sentence"),
    )
    if case["workload"] == "pipeline":
        out = df.select("value", "ts", F.length(F.concat(F.upper("sentence"), F.lit("!"))).alias("len"))
        mode = "append"
    else:
        words = df.select("value", "ts", F.explode(F.split("sentence", " ")).alias("word"))
        out = words.groupBy("word").agg(F.count("*").alias("count"), F.max("value").alias("max_value"),
                                        F.max("ts").alias("max_ts"))
        mode = "update"
    return (out.writeStream.outputMode(mode).foreachBatch(sink)
            .option("checkpointLocation", checkpoint).start())


def run_case(session: Session, case: dict) -> dict[str, Any]:
    spark = session.get(case["workers"])
    sink = Sink(case)
    checkpoint = tempfile.TemporaryDirectory(prefix="spark-ss-ckpt-", ignore_cleanup_errors=True)
    query = build_query(spark, case, sink, checkpoint.name)
    session.queries += 1
    try:
        # the warm-up starts once a few micro-batches are through (squall's starts when
        # submit returns, every task ready): a query's first batches take seconds, and a
        # paced query's next ones catch up on what arrived meanwhile
        deadline = time.perf_counter() + FIRST_BATCH_TIMEOUT_S
        while (len(sink.progress) < STEADY_BATCHES and query.exception() is None
               and time.perf_counter() < deadline):
            time.sleep(0.05)
        warmup = case["warmup_s"] + (JVM_WARMUP_S if session.queries == 1 else 0.0)
        window = Window(warmup, case["duration_s"])
        window.sleep_until(window.t1)
        memory = tree_rss()
        # the batch running at t1 ends after it: wait for it, so its rows can be counted
        deadline = time.perf_counter() + 30
        while (not sink.progress or sink.progress[-1][0] < window.t1) and time.perf_counter() < deadline:
            if query.exception() is not None:
                break
            time.sleep(0.05)
        failure = query.exception()
    finally:
        query.stop()
        checkpoint.cleanup()
    if failure is not None:
        raise RuntimeError(f"query failed: {failure}")
    row = base_row(case, SYSTEM)
    row.update(figures(case, window.t0, window.t1, sink=[sink.progress], latencies=sink.latencies))
    row.update(memory)
    row["batches"] = sum(1 for t, _ in sink.progress if window.t0 <= t <= window.t1)
    row["words_per_sentence"] = WORDS_PER_SENTENCE
    row["delivery"] = "exactly-once state (micro-batch checkpoints)"
    row["memory_note"] = "driver Python + JVM (no Python workers: built-in SQL steps)"
    row["master"] = f"local[{case['workers']}]"
    row["versions"] = versions("pyspark")
    return row


def main() -> int:
    session = Session()
    try:
        return serve(SYSTEM, lambda case: run_case(session, case))
    finally:
        if session.spark is not None:
            session.spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
