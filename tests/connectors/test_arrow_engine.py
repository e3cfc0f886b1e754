"""The pyarrow engine of the Spark connectors (what their tasks use inside Spark executors),
on LocalCluster without a JVM: files round trip, Parquet in -> words -> Parquet out exact,
and checkpoint-aligned writes through a rollback."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from squall import LocalCluster
from tests.connectors.aligned_topology import build, config
from tests.connectors.components import RECORD

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from squall.connectors import arrow_io  # noqa: E402 - after the importorskip
from squall.connectors.spark import DataFrameSpout, DataFrameWriterBolt  # noqa: E402


def sentences(n):
    words = ["apple", "pear", "fig", "plum", "kiwi"]
    return [(i, " ".join(words[(i + k) % len(words)] for k in range(1 + i % 4))) for i in range(n)]


def write_input(path, rows, files):
    path.mkdir(parents=True)
    for f in range(files):
        part = [r for r in rows if r[0] % files == f]
        pq.write_table(pa.table({"id": [r[0] for r in part], "sentence": [r[1] for r in part]}),
                       path / f"part-{f}.parquet")


def read_output(out):
    import pyarrow.dataset as ds

    if not out.exists():
        return Counter(), {}
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    keys = list(zip(table.column("id").to_pylist(), table.column("pos").to_pylist(), strict=True))
    return Counter(keys), dict(zip(keys, table.column("word").to_pylist(), strict=True))


def all_done(progress, files):
    records = [json.loads(p.read_text()) for p in progress.glob("*.json")]
    return len(records) == files and all(r["done"] for r in records)


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_a_written_batch_reads_back_with_its_partition_column_last(tmp_path, fmt):
    rows = [(1, "a", 0), (2, None, 1), (3, "c", 0)]
    arrow_io.write_batch(rows, ["id", "word", "pos"], tmp_path / "b", fmt, ["pos"],
                         {}, "id long, word string, pos int")
    files = arrow_io.list_files(str(tmp_path / "b"))
    assert [f.rsplit("/", 2)[-2] for f in files] == ["pos=0", "pos=1"]
    assert all(f.startswith("file:///") for f in files)
    schema = None if fmt == "parquet" else "id long, word string"
    back = [r for f in files for r in arrow_io.read_rows(f, str(tmp_path / "b"), fmt, {}, schema)]
    assert sorted(back) == [[1, "a", 0], [2, None, 1], [3, "c", 0]]
    assert (tmp_path / "b" / "_SUCCESS").exists()  # skipped by list_files, as by Spark


def test_bad_arguments_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"schema 'id lng': cannot read 'id lng' without Spark"):
        arrow_io.parse_ddl("id lng")
    with pytest.raises(ValueError, match=r"DataFrameSpout: engine='pandas'; choose one of auto, spark"):
        DataFrameSpout(str(tmp_path), progress=str(tmp_path), engine="pandas")
    with pytest.raises(ValueError, match=r"query= needs Spark; engine='arrow' reads path= only"):
        DataFrameSpout(progress=str(tmp_path), query=lambda s: s.range(1), engine="arrow")
    with pytest.raises(ValueError, match=r"DataFrameWriterBolt: format 'orc' needs Spark"):
        DataFrameWriterBolt(str(tmp_path), format="orc", engine="arrow")
    with pytest.raises(ValueError, match=r"no data files to read the columns from; give fields="):
        arrow_io.columns(str(tmp_path), "parquet", {}, None)


def test_parquet_in_words_parquet_out_is_exact_with_pyarrow(tmp_path):
    rows = sentences(300)
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    write_input(src, rows, 3)
    from squall import Config, TopologyBuilder
    from tests.connectors.components import SplitWords

    b = TopologyBuilder()
    b.set_spout("rows", DataFrameSpout(str(src), progress=str(progress), commit_interval_secs=0.1,
                                       engine="arrow"), 2)  # columns read by pyarrow
    b.set_bolt("split", SplitWords(), 2).shuffle_grouping("rows")
    writer = DataFrameWriterBolt(str(out), batch_rows=100, flush_secs=0.1, partition_by=["pos"],
                                 engine="arrow")
    b.set_bolt("write", writer, 2).shuffle_grouping("split")
    c = Config()
    c.set_num_workers(2)
    c.set_max_spout_pending(200)
    with LocalCluster() as cluster:
        cluster.submit_topology("arrow", c, b.create_topology())
        assert wait_for(lambda: all_done(progress, 3))
    counts, words = read_output(out)
    want = {(i, pos): w for i, s in rows for pos, w in enumerate(s.split())}
    assert words == want
    assert set(counts.values()) == {1}


def test_a_rollback_leaves_the_committed_output_exact_with_pyarrow(tmp_path):
    rows = sentences(300)
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    write_input(src, rows, 2)
    # tally fed by split: fed by rows, it would take the checkpoint straight from the
    # checkpoint spout, not behind the sentences, and a sentence could fall in a committed
    # transaction at the writer and the rolled-back one at tally, to be written twice as
    # at-least-once allows (test_aligned_writer counts that case)
    topology = build(str(src), str(progress), str(out), engine="arrow", tally_fails_after=150,
                     tally_from="split")
    with LocalCluster() as cluster:
        cluster.submit_topology("aligned-arrow", config(interval_ms=200), topology)
        assert wait_for(lambda: all_done(progress, 2), timeout=90)
    assert RECORD["tally.failed"] and RECORD["tally.rollback"], "no rollback happened"
    assert len(RECORD["split.seen"]) > len(set(RECORD["split.seen"])), "nothing was replayed"
    counts, words = read_output(out)
    want = {(i, pos): w for i, s in rows for pos, w in enumerate(s.split())}
    assert set(counts) == set(want), f"{len(set(want) - set(counts))} rows missing"
    duplicates = {k: n for k, n in counts.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} rows written twice, e.g. {list(duplicates)[:5]}"
    assert words == want
    assert not list((out / "_squall_txn").rglob("*.parquet")), "staged files left behind"
