"""DataFrameSpout as a seekable spout (exactly-once): position ({segment: row}), seek back,
seek after a restart, and seeks to rows or files that are gone; read with pyarrow and with
Spark local mode."""

from pathlib import Path

import pytest

from squall import SeekableSpout
from squall.connectors.files import SourceTruncatedError
from squall.connectors.spark import DataFrameSpout
from squall.runtime import clock
from tests.connectors.seeking import opened, pump, quiet, roundtrip, seek_back

ENGINES = ["arrow", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.slow])]


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


@pytest.fixture(params=ENGINES)
def engine(request):
    if request.param == "spark":
        request.getfixturevalue("spark")  # the module's SparkSession, active in this thread
    return request.param


def write_parts(src: Path, parts=2, rows=10) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src.mkdir(parents=True, exist_ok=True)
    for p in range(parts):
        ids = list(range(p * rows, (p + 1) * rows))
        pq.write_table(pa.table({"id": ids, "word": [f"w{i}" for i in ids]}), src / f"part-{p}.parquet")


def spout(tmp_path: Path, engine: str) -> DataFrameSpout:
    return DataFrameSpout(tmp_path / "in", progress=tmp_path / "progress", fields=("id", "word"),
                          engine=engine, commit_interval_secs=0.5)


def ids(records):
    return [v[0] for v, _ in records]


def test_the_position_is_the_next_row_of_each_segment_started(tmp_path, sim):
    write_parts(tmp_path / "in")
    s = spout(tmp_path, "arrow")
    out = opened(s)
    assert isinstance(s, SeekableSpout)
    assert s.position() == {}
    assert pump(s, out, 13, sim)
    segments = sorted(s.position())
    assert [Path(x).name for x in segments] == ["part-0.parquet", "part-1.parquet"]
    assert s.position() == {segments[0]: 10, segments[1]: 3}


@pytest.mark.parametrize("first", [0, 1, 9, 10, 11, 20])
def test_after_a_seek_exactly_the_rows_after_the_position_come_again_in_order(tmp_path, sim, engine, first):
    write_parts(tmp_path / "in")
    s = spout(tmp_path, engine)
    out = opened(s)
    position, after = seek_back(s, out, sim, first, 20)
    assert ids(after) == list(range(first, 20))
    start = len(out.emitted)
    assert pump(s, out, 20 + len(after), sim)
    assert out.records(start) == after  # same rows, same msg ids (segment, row), same order
    assert quiet(s, out, sim, calls=20) == []
    assert out.letters() == []


def test_seek_after_a_restart_reads_from_the_old_instances_position(tmp_path, sim, engine):
    write_parts(tmp_path / "in")
    old = spout(tmp_path, engine)
    out = opened(old)
    assert pump(old, out, 14, sim)
    for _, m in out.records()[:5]:
        old.ack(m)
    sim.advance(1)
    assert pump(old, out, 15, sim)  # commits rows 0-4 on the way
    position = roundtrip(old.position())
    new = spout(tmp_path, engine)  # the old task died; a new one opens on the same progress
    out2 = opened(new)
    new.seek(position)
    assert pump(new, out2, 5, sim)
    assert ids(out2.records()) == list(range(15, 20))
    assert quiet(new, out2, sim, calls=20) == []
    for _, m in out2.records():
        new.ack(m)
    new.close()
    # rows before the position count as done, so both segments end up done
    reopened = spout(tmp_path, "arrow")
    out3 = opened(reopened)
    assert quiet(reopened, out3, sim, calls=20) == []


def test_a_segment_read_to_its_end_before_the_position_stays_done(tmp_path, sim):
    write_parts(tmp_path / "in")
    s = spout(tmp_path, "arrow")
    out = opened(s)
    assert pump(s, out, 12, sim)
    position = s.position()
    s.seek(position)
    start = len(out.emitted)
    assert pump(s, out, 20, sim)
    assert ids(out.records(start)) == list(range(12, 20))


def test_seek_to_a_file_that_is_gone_is_refused_in_one_line(tmp_path, sim):
    write_parts(tmp_path / "in")
    s = spout(tmp_path, "arrow")
    out = opened(s)
    assert pump(s, out, 12, sim)
    position = s.position()
    (tmp_path / "in" / "part-1.parquet").unlink()
    with pytest.raises(SourceTruncatedError) as e:
        s.seek(position)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("DataFrameSpout 'src' (task 0): cannot seek to file://")
    assert message.endswith("part-1.parquet row 2: the file no longer exists")


def test_seek_to_a_row_a_rewritten_file_no_longer_has_is_refused(tmp_path, sim):
    write_parts(tmp_path / "in")
    s = spout(tmp_path, "arrow")
    out = opened(s)
    assert pump(s, out, 8, sim)
    position = s.position()
    write_parts(tmp_path / "in", parts=1, rows=5)  # part-0 now has 5 rows
    s.seek(position)
    with pytest.raises(SourceTruncatedError, match=r"DataFrameSpout 'src' \(task 0\): cannot seek to "
                                                     r"\S+part-0.parquet row 8: it has only 5 rows now"):
        for _ in range(20):
            s.next_tuple()
            sim.advance(0.05)


def test_a_segment_done_then_deleted_does_not_stop_a_seek_and_leaves_the_position(tmp_path, sim):
    # RELIABILITY E25: a processed file archived or deleted must not hang exactly-once; done
    # segments whose progress is written leave the position, so it does not grow
    write_parts(tmp_path / "in", parts=3, rows=4)
    s = spout(tmp_path, "arrow")
    out = opened(s)
    assert pump(s, out, 12, sim)
    for _, m in out.records():
        s.ack(m)
    position = roundtrip(s.position())  # before the progress is written: all three listed
    assert len(position) == 3
    (tmp_path / "in" / "part-0.parquet").unlink()
    s.seek(position)
    assert quiet(s, out, sim) == []
    assert s.position() == {}  # done, and written by the commit timer meanwhile
    (tmp_path / "in" / "part-1.parquet").unlink()
    s.close()
    new = spout(tmp_path, "arrow")
    out2 = opened(new)
    new.seek(position)  # a restart from the older position: the progress says done
    assert quiet(new, out2, sim) == []


def test_a_task_loads_and_rewrites_only_its_own_segments_progress(tmp_path, sim):
    # the review's note: task 0 loaded task 1's progress at open, and its seek wrote it back
    # later, stale, over what task 1 had committed since
    write_parts(tmp_path / "in", parts=6, rows=3)
    one = spout(tmp_path, "arrow")
    out1 = opened(one, index=1, tasks=2)
    assert pump(one, out1, 2, sim)
    one.ack(out1.records()[0][1])
    sim.advance(1)
    one.next_tuple()  # task 1's progress: 1 row of its first segment
    zero = spout(tmp_path, "arrow")
    opened(zero, index=0, tasks=2)
    one.ack(out1.records()[1][1])
    sim.advance(1)
    one.next_tuple()  # task 1's progress: 2 rows
    before = {p.name: p.read_text() for p in (tmp_path / "progress").iterdir()}
    zero.seek(zero.position())
    zero.close()
    after = {p.name: p.read_text() for p in (tmp_path / "progress").iterdir()}
    assert [n for n in before if before[n] != after.get(n)] == []
    assert all(zero.merge_positions([{s: 0}], 0, 2) == {s: 0} for s in zero.marks)
