"""Spark connectors on the Spark runtime (SparkCluster, local[3]): their tasks run inside Spark
executors, where they read and write with pyarrow. Parquet files in -> words -> Parquet files
out through the checkpoint-aligned writer, exact, with a worker SIGKILLed mid-run."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from squall import Config, TopologyBuilder
from tests.connectors.components import SentenceTally, SplitWords
from tests.connectors.test_spark import sentences

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from squall.spark import SparkCluster

    with SparkCluster(master="local[3]", log_dir=str(tmp_path_factory.mktemp("spark-logs"))) as cluster:
        cluster.start()
        yield cluster


def write_parquet(path: Path, rows, files: int) -> list[list[int]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True)
    ids = []
    for f in range(files):
        part = [r for r in rows if r[0] % files == f]
        pq.write_table(pa.table({"id": [r[0] for r in part], "sentence": [r[1] for r in part]}),
                       path / f"part-{f}.parquet")
        ids.append([r[0] for r in part])
    return ids


def read_output(out: Path) -> tuple[Counter, dict]:
    import pyarrow.dataset as ds

    if not out.exists():
        return Counter(), {}
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    keys = list(zip(table.column("id").to_pylist(), table.column("pos").to_pylist(), strict=True))
    return Counter(keys), dict(zip(keys, table.column("word").to_pylist(), strict=True))


def progress_state(progress: Path) -> dict:
    records = [json.loads(p.read_text()) for p in progress.glob("*.json")]
    return {r["segment"].rsplit("/", 1)[-1]: (r["rows"], r["done"]) for r in records}


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout}s"
        time.sleep(0.2)


def test_parquet_word_split_parquet_on_the_spark_runtime_survives_a_killed_worker(spark_cluster, tmp_path):
    from squall.connectors.spark import DataFrameSpout, DataFrameWriterBolt

    n, files = 1500, 3
    rows = sentences(n)
    src, progress, out, state = (tmp_path / d for d in ("in", "progress", "out", "state"))
    file_ids = write_parquet(src, rows, files)
    b = TopologyBuilder()
    # no fields=: read from the files at build time, by Spark in this driver
    b.set_spout("rows", DataFrameSpout(str(src), progress=str(progress), commit_interval_secs=0.1), 2)
    b.set_bolt("split", SplitWords(delay=0.003), 2).shuffle_grouping("rows")
    b.set_bolt("tally", SentenceTally()).shuffle_grouping("rows")
    b.set_bolt("write", DataFrameWriterBolt(str(out), batch_rows=300, flush_secs=0.2,
                                            partition_by=["pos"]), 2).shuffle_grouping("split")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(100)
    conf.set_message_timeout_secs(10)
    conf["topology.state.checkpoint.interval.ms"] = 300
    conf["topology.state.provider"] = "squall.state.local.LocalStateProvider"
    conf["topology.state.provider.config"] = {"path": str(state)}

    def acked_ids() -> set[int]:
        done: set[int] = set()
        for name, (k, _) in progress_state(progress).items():
            done.update(file_ids[int(name.split("-")[1].split(".")[0])][:k])
        return done

    def all_done() -> bool:
        st = progress_state(progress)
        return len(st) == files and all(d for _, d in st.values())

    spark_cluster.submit_topology("pq-spark", conf, b.create_topology())
    try:
        info = spark_cluster.get_topology_info("pq-spark")
        writers = set(info["components"]["write"]["tasks"])
        victim = next(w for w in info["workers"] if set(w["tasks"]) & writers)
        wait_until(lambda: len(acked_ids()) >= 200, 120, "200 sentences acked")
        assert not all_done(), "the run finished before the kill: slow it down"
        at_kill, _ = read_output(out)
        first = acked_ids()
        os.kill(victim["pid"], signal.SIGKILL)
        wait_until(lambda: (lambda w: w["state"] == "RUNNING" and w["pid"] not in (None, victim["pid"]))(
            spark_cluster.get_topology_info("pq-spark")["workers"][victim["worker"]]), 90,
            "the killed worker's return")
        wait_until(all_done, 240, "every file done")
        errors = [e["message"] for e in spark_cluster.get_topology_info("pq-spark")["errors"]]
    finally:
        spark_cluster.kill_topology("pq-spark", wait_secs=0)
    counts, words = read_output(out)
    want = {(i, pos): w for i, s in rows for pos, w in enumerate(s.split())}
    assert set(counts) == set(want), (f"{len(set(want) - set(counts))} rows missing; "
                                      f"errors: {errors[:3]}")
    assert words == want
    assert Counter(words.values()) == Counter(w for _, s in rows for w in s.split())
    # at-least-once: a sentence the spout had committed before the kill is never written again
    repeated = {k[0] for k, c in counts.items() if c > 1}
    assert not repeated & first
    duplicates = sum(c - 1 for c in counts.values())
    print(f"worker {victim['worker']} killed after {len(first)}/{n} sentences acked "
          f"({len({k[0] for k in at_kill})} in the output): {duplicates} duplicate rows, "
          f"{len(repeated)} sentences")
