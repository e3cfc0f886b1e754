"""Spark DataFrames in and out on real Spark local mode: Parquet in -> words -> Parquet out,
restarts resuming over acked rows, dead letters to a Parquet folder, failed writes."""

from __future__ import annotations

import json
import re
import time
from collections import Counter

import pytest

from squall import Config, LocalCluster, TopologyBuilder
from squall.connectors.reliable import DEAD_LETTER_STREAM
from squall.connectors.spark import DataFrameSpout, DataFrameWriterBolt, dead_letter_writer
from tests.connectors.components import RECORD, SplitWords

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

WORDS = ["apple", "pear", "fig", "plum", "kiwi"]


def sentences(n):
    return [(i, " ".join(WORDS[(i + k) % len(WORDS)] for k in range(1 + i % 4))) for i in range(n)]


def expected_counts(rows):
    return Counter(w for _, s in rows for w in s.split())


def write_input(spark, path, rows, files=4):
    spark.createDataFrame(rows, "id long, sentence string").repartition(files, "id") \
        .write.mode("overwrite").parquet(str(path))


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def conf(**extra):
    c = Config()
    c.set_num_workers(2)
    c.set_max_spout_pending(200)
    c.update(extra)
    return c


def pipeline(src, progress, out, hold=frozenset(), bad=None, dead=None, **spout_args):
    b = TopologyBuilder()
    b.set_spout("rows", DataFrameSpout(src, progress=progress, commit_interval_secs=0.1,
                                       **spout_args), 2)
    b.set_bolt("split", SplitWords(hold=hold, bad=bad), 2).shuffle_grouping("rows")
    b.set_bolt("write", DataFrameWriterBolt(out, batch_rows=100, flush_secs=0.2,
                                            partition_by=["pos"]), 2).shuffle_grouping("split")
    if dead is not None:
        b.set_bolt("dead", dead_letter_writer(dead, flush_secs=0.2)).shuffle_grouping(
            "rows", stream=DEAD_LETTER_STREAM)
    return b.create_topology()


def read_words(spark, out):
    try:
        rows = spark.read.parquet(str(out)).select("id", "pos", "word").collect()
    except Exception:  # noqa: BLE001 - nothing written yet
        return [], Counter()
    unique = {(r.id, r.pos): r.word for r in rows}
    return rows, Counter(unique.values())


def done_progress(progress):
    records = [json.loads(p.read_text()) for p in progress.glob("*.json")]
    return {r["segment"].rsplit("/", 1)[-1]: (r["rows"], r["done"]) for r in records}


def test_parquet_in_word_split_parquet_out_is_exact(spark, tmp_path):
    rows = sentences(400)
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    write_input(spark, src, rows)
    files = sorted(p.name for p in src.glob("*.parquet"))
    topology = pipeline(str(src), str(progress), str(out))  # columns read from the source
    with LocalCluster() as cluster:
        cluster.submit_topology("pq", conf(), topology)
        assert wait_for(lambda: len(set(RECORD["split.seen"])) >= 400)
        assert wait_for(lambda: len(done_progress(progress)) == len(files)
                        and all(d for _, d in done_progress(progress).values()))
    written, counts = read_words(spark, out)
    assert counts == expected_counts(rows)
    assert len(written) == sum(counts.values())  # no duplicates in a run without failures
    assert sorted(done_progress(progress)) == files
    assert sorted(RECORD["split.seen"]) == list(range(400))


def test_a_restart_skips_done_files_and_replays_from_the_first_unacked_row(spark, tmp_path):
    rows = sentences(200)
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    write_input(spark, src, rows, files=2)
    held = 123
    ids = {p.name: [r.id for r in spark.read.parquet(str(p)).collect()] for p in src.glob("*.parquet")}
    [open_file] = [name for name, file_ids in ids.items() if held in file_ids]
    file_ids = ids[open_file]
    with LocalCluster() as cluster:
        cluster.submit_topology("pq", conf(), pipeline(str(src), str(progress), str(out),
                                                       hold=frozenset({held})))
        assert wait_for(lambda: len(set(RECORD["split.seen"])) >= 200)
        # everything but the held row completes: the other file is done, this one's mark
        # stops at the held row however long we wait
        assert wait_for(lambda: done_progress(progress).get(open_file) == (file_ids.index(held), False)
                        and sum(d for _, d in done_progress(progress).values()) == 1)
        cluster.kill_topology("pq")
    at = file_ids.index(held)
    assert done_progress(progress)[open_file] == (at, False)
    RECORD.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("pq", conf(), pipeline(str(src), str(progress), str(out)))
        assert wait_for(lambda: all(d for _, d in done_progress(progress).values()))
    assert sorted(RECORD["split.seen"]) == sorted(file_ids[at:])  # only the rest of that file
    written, counts = read_words(spark, out)
    assert counts == expected_counts(rows)  # exact, once deduplicated by (id, pos)
    duplicates = len(written) - sum(counts.values())
    assert duplicates == sum(len(s.split()) for i, s in rows if i in file_ids[at + 1:])


def test_a_query_source_with_a_poison_row_dead_letters_it_to_a_parquet_folder(spark, tmp_path):
    rows = sentences(50)
    src, progress, out, dead = (tmp_path / n for n in ("in", "progress", "out", "dead"))
    write_input(spark, src, rows, files=1)
    path = str(src)

    def query(s):
        return s.read.parquet(path).orderBy("id")

    spout_args = {"query": query, "fields": ("id", "sentence")}
    b = TopologyBuilder()
    spout = DataFrameSpout(progress=str(progress), commit_interval_secs=0.1, **spout_args)
    spout.max_retries = 1
    b.set_spout("rows", spout)
    b.set_bolt("split", SplitWords(bad=7), 2).shuffle_grouping("rows")
    b.set_bolt("write", DataFrameWriterBolt(str(out), flush_secs=0.2)).shuffle_grouping("split")
    b.set_bolt("dead", dead_letter_writer(str(dead), flush_secs=0.2)).shuffle_grouping(
        "rows", stream=DEAD_LETTER_STREAM)
    with LocalCluster() as cluster:
        cluster.submit_topology("q", conf(), b.create_topology())
        assert wait_for(lambda: done_progress(progress).get("query") == (50, True))
    [letter] = spark.read.parquet(str(dead)).collect()
    assert json.loads(letter.msg_id) == ["query", 7]
    assert json.loads(letter.values) == [7, rows[7][1]]
    assert (letter.reason, letter.component, letter.attempts) == ("error", "split", 2)
    assert "ValueError: cannot split 7" in letter.error
    _, counts = read_words(spark, out)
    assert counts == expected_counts([r for r in rows if r[0] != 7])


def test_a_failed_write_fails_the_batch_and_reports_why(spark, tmp_path):
    blocker = tmp_path / "out"
    blocker.write_text("a file where the output directory should be")
    b = TopologyBuilder()
    spout = DataFrameSpout(progress=str(tmp_path / "p"), query=lambda s: s.range(5),
                           fields=("id",), commit_interval_secs=0.1)
    spout.max_retries = 0
    b.set_spout("rows", spout)
    b.set_bolt("write", DataFrameWriterBolt(str(blocker), flush_secs=0.2)).shuffle_grouping("rows")
    with LocalCluster() as cluster:
        cluster.submit_topology("w", conf(), b.create_topology())
        assert wait_for(lambda: done_progress(tmp_path / "p").get("query") == (5, True))
        errors = [e["message"] for e in cluster.get_topology_info("w")["errors"]]
    # the 5 rows may reach the writer in one batch or several, as flushes fall
    pattern = rf"RuntimeError: DataFrameWriterBolt: writing (\d+) rows? to {re.escape(str(blocker))} failed"
    written = [re.match(pattern, m) for m in errors]
    assert sum(int(w.group(1)) for w in written if w) == 5, errors
    assert sum("sent to __dead_letter" in m for m in errors) == 5


def test_exactly_one_source_is_required(tmp_path):
    with pytest.raises(ValueError, match="needs exactly one of path="):
        DataFrameSpout(progress=str(tmp_path))
    with pytest.raises(ValueError, match="needs exactly one of path="):
        DataFrameSpout(str(tmp_path), progress=str(tmp_path), query=lambda s: s.range(1))


def test_a_streaming_source_commits_a_micro_batch_only_once_every_row_is_acked(spark, tmp_path):
    from squall.connectors.spark import StreamingDataFrameSpout

    src, checkpoint, out = tmp_path / "in", tmp_path / "checkpoint", tmp_path / "out"
    rows = sentences(60)
    write_input(spark, src, rows, files=2)
    path = str(src)

    def stream(s):
        return s.readStream.schema("id long, sentence string").parquet(path)

    def topology(hold=frozenset()):
        b = TopologyBuilder()
        b.set_spout("rows", StreamingDataFrameSpout(stream, checkpoint=str(checkpoint), trigger_secs=0.2))
        b.set_bolt("split", SplitWords(hold=hold), 2).shuffle_grouping("rows")
        b.set_bolt("write", DataFrameWriterBolt(str(out), flush_secs=0.2)).shuffle_grouping("split")
        return b.create_topology()

    committed = checkpoint / "commits" / "0"
    # run 1: one row is never acked, so the first micro-batch is never committed
    with LocalCluster() as cluster:
        cluster.submit_topology("s", conf(), topology(hold=frozenset({17})))
        assert wait_for(lambda: len(set(RECORD["split.seen"])) >= 60)
        time.sleep(1.0)
        assert not committed.exists()
        cluster.kill_topology("s")
    assert not committed.exists()
    # run 2: Spark runs the batch again; every row is replayed and the batch commits
    RECORD.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("s", conf(), topology())
        assert wait_for(lambda: committed.exists())
        assert sorted(RECORD["split.seen"]) == list(range(60))
        # run 2 goes on with new files only
        write_input_more = [(i, "late fig") for i in range(100, 105)]
        spark.createDataFrame(write_input_more, "id long, sentence string").coalesce(1) \
            .write.mode("append").parquet(path)
        assert wait_for(lambda: len(RECORD["split.seen"]) >= 65)
        assert wait_for(lambda: (checkpoint / "commits" / "1").exists())
        time.sleep(0.5)
    assert sorted(RECORD["split.seen"]) == list(range(60)) + list(range(100, 105))
    written, counts = read_words(spark, out)
    assert counts == expected_counts(rows + write_input_more)
    assert len(written) - sum(counts.values()) == sum(len(s.split()) for i, s in rows if i != 17)
