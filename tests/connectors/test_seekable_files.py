"""FileSpout as a seekable spout (exactly-once): position, seek back, seek after a restart,
a position through msgpack, and a seek to bytes the file no longer has."""

from pathlib import Path

import pytest

from squall import SeekableSpout
from squall.connectors.files import FileSpout, SourceTruncatedError
from squall.runtime import clock
from tests.connectors.seeking import opened, pump, quiet, roundtrip, seek_back

LINES = [f"line {i}" for i in range(20)]


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


def source(tmp_path: Path, files=None) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    for name, lines in (files or {"a.txt": LINES}).items():
        (src / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return src


def spout(tmp_path: Path, src: Path) -> FileSpout:
    return FileSpout(src, "*.txt", progress=tmp_path / "progress", commit_interval_secs=0.5)


def offset_of(line: int) -> int:
    return sum(len(x) + 1 for x in LINES[:line])


def test_a_file_spout_is_seekable_and_its_position_is_file_and_byte_offset(tmp_path, sim):
    s = spout(tmp_path, source(tmp_path))
    out = opened(s)
    assert isinstance(s, SeekableSpout)
    assert s.position() == {}
    assert pump(s, out, 3, sim)
    assert s.position() == {"a.txt": offset_of(3)}


@pytest.mark.parametrize("first", [0, 1, 7, 19, 20])
def test_after_a_seek_exactly_the_lines_after_the_position_come_again_in_order(tmp_path, sim, first):
    s = spout(tmp_path, source(tmp_path))
    out = opened(s)
    position, after = seek_back(s, out, sim, first, 20)
    assert [v for v, _ in after] == [[x] for x in LINES[first:]]
    start = len(out.emitted)
    assert pump(s, out, 20 + len(after), sim)
    assert out.records(start) == after  # same lines, same msg ids, same order
    assert quiet(s, out, sim) == []
    assert out.letters() == []


def test_the_seek_lands_on_the_line_at_the_offset_not_one_byte_off(tmp_path, sim):
    # the position is the first byte of line 5: one byte earlier reads an empty line (the
    # line break of line 4), one byte later a cut line 5
    s = spout(tmp_path, source(tmp_path))
    out = opened(s)
    assert pump(s, out, 5, sim)
    assert s.position() == {"a.txt": offset_of(5)}
    s.seek(s.position())
    start = len(out.emitted)
    assert pump(s, out, 5 + 15, sim)
    assert [v for v, _ in out.records(start)] == [[x] for x in LINES[5:]]
    assert [m for _, m in out.records(start)][0] == ("a.txt", offset_of(5))


def test_lines_read_ahead_but_not_emitted_are_after_the_position(tmp_path, sim):
    # a poll reads a whole chunk; the position is the next line emitted, not the chunk's end
    s = spout(tmp_path, source(tmp_path))
    out = opened(s)
    assert pump(s, out, 1, sim)
    assert s._lines  # the rest of the chunk waits to be emitted
    assert s.position() == {"a.txt": offset_of(1)}


def test_seek_forgets_in_flight_lines_after_the_position_and_finishes_those_before(tmp_path, sim):
    s = spout(tmp_path, source(tmp_path))
    out = opened(s)
    assert pump(s, out, 4, sim)
    position = s.position()
    assert pump(s, out, 8, sim)
    s.seek(position)
    assert s.in_flight() == 0
    sim.advance(1)
    assert pump(s, out, 12, sim)  # commits on the way: lines 0-3 count as done
    assert (tmp_path / "progress" / "a.txt.offset").read_text().strip() == str(offset_of(4))
    for _, m in out.records(8):
        s.ack(m)
    s.close()
    assert (tmp_path / "progress" / "a.txt.offset").read_text().strip() == str(offset_of(8))


def test_several_files_each_come_again_from_their_own_offset(tmp_path, sim):
    files = {f"p{k}.txt": [f"p{k} {i}" for i in range(6)] for k in range(3)}
    s = spout(tmp_path, source(tmp_path, files))
    out = opened(s)
    position, after = seek_back(s, out, sim, 8, 18)
    assert position == {"p0.txt": 6 * 5, "p1.txt": 2 * 5}
    start = len(out.emitted)
    assert pump(s, out, 18 + 10, sim)
    again = out.records(start)
    assert sorted(map(str, again)) == sorted(map(str, after))
    for name in files:  # in order within each file
        assert [m for _, m in again if m[0] == name] == [m for _, m in after if m[0] == name]


def test_seek_after_a_restart_reads_from_the_old_instances_position(tmp_path, sim):
    src = source(tmp_path)
    old = spout(tmp_path, src)
    out = opened(old)
    assert pump(old, out, 12, sim)
    for _, m in out.records()[:6]:
        old.ack(m)
    sim.advance(1)
    assert pump(old, out, 14, sim)  # the acked lines' offset is committed on the way
    position = roundtrip(old.position())
    # the old task dies here (nothing closed); a new instance opens on the same progress
    new = spout(tmp_path, src)
    out2 = opened(new)
    new.seek(position)
    assert pump(new, out2, 6, sim)
    assert [v for v, _ in out2.records()] == [[x] for x in LINES[14:]]
    assert quiet(new, out2, sim) == []


def test_a_file_appearing_after_the_position_is_read_again_from_its_start(tmp_path, sim):
    src = source(tmp_path)
    s = spout(tmp_path, src)
    out = opened(s)
    assert pump(s, out, 20, sim)
    position = s.position()
    (src / "b.txt").write_text("b0\nb1\n", encoding="utf-8")
    assert pump(s, out, 22, sim)
    s.seek(position)
    start = len(out.emitted)
    assert pump(s, out, 24, sim)
    assert [v for v, _ in out.records(start)] == [["b0"], ["b1"]]
    assert quiet(s, out, sim) == []


def test_seek_to_bytes_a_truncated_file_no_longer_has_is_refused_in_one_line(tmp_path, sim):
    src = source(tmp_path)
    s = spout(tmp_path, src)
    out = opened(s)
    assert pump(s, out, 10, sim)
    position = s.position()
    (src / "a.txt").write_text("short\n", encoding="utf-8")
    with pytest.raises(SourceTruncatedError) as e:
        s.seek(position)
    message = str(e.value)
    assert "\n" not in message
    assert "FileSpout 'src'" in message and f"a.txt byte {offset_of(10)}" in message
    assert "truncated" in message


def test_seek_to_a_file_that_is_gone_is_refused(tmp_path, sim):
    src = source(tmp_path)
    s = spout(tmp_path, src)
    out = opened(s)
    assert pump(s, out, 3, sim)
    position = s.position()
    (src / "a.txt").unlink()
    with pytest.raises(SourceTruncatedError, match=r"FileSpout 'src' \(task 0\): cannot seek to "
                                                     r"a.txt byte 2\d: .* no longer exists"):
        s.seek(position)


def test_a_file_read_to_its_end_and_done_then_deleted_does_not_stop_a_seek(tmp_path, sim):
    # RELIABILITY E25: archiving or deleting a processed file must not hang exactly-once
    src = source(tmp_path, {"one.txt": ["a", "b"], "two.txt": ["c", "d"]})
    s = spout(tmp_path, src)
    out = opened(s)
    assert pump(s, out, 4, sim)
    for _, m in out.records():
        s.ack(m)
    position = roundtrip(s.position())  # taken before the progress is written: both listed
    (src / "one.txt").unlink()
    s.seek(position)
    assert quiet(s, out, sim) == []
    # and after a restart, from the progress files alone
    sim.advance(1)
    s.next_tuple()  # writes the progress
    s.close()
    (src / "two.txt").unlink()
    new = spout(tmp_path, src)
    out2 = opened(new)
    new.seek(position)
    assert quiet(new, out2, sim) == []


def test_the_position_leaves_out_files_done_and_written_so_it_does_not_grow(tmp_path, sim):
    files = {f"f{k:03}.txt": [f"{k} {i}" for i in range(3)] for k in range(50)}
    s = spout(tmp_path, source(tmp_path, files))
    out = opened(s)
    assert pump(s, out, 150, sim)
    for _, m in out.records():
        s.ack(m)
    sim.advance(1)
    s.next_tuple()  # the commit timer writes the progress
    assert s.position() == {}
    (tmp_path / "in" / "f999.txt").write_text("new\n", encoding="utf-8")
    assert pump(s, out, 151, sim)
    assert s.position() == {"f999.txt": 4}
    # a seek to the position before the new file reads only the new file again
    s.seek({})
    assert quiet(s, out, sim) == [(["new"], ("f999.txt", 0))]


def test_committed_writes_the_progress_of_the_files_listed_up_to_their_offsets(tmp_path, sim):
    # issue 41 item 3c: lines emitted by a task that died before its COMMIT were never acked
    src = source(tmp_path)
    old = spout(tmp_path, src)
    out = opened(old)
    assert pump(old, out, 4, sim)
    position = roundtrip(old.position())
    new = spout(tmp_path, src)
    opened(new)
    new.committed({**position, "../x.txt": 3})  # a name outside the directory is ignored
    assert (tmp_path / "progress" / "a.txt.offset").read_text().strip() == str(offset_of(4))
    new.committed({"a.txt": 1})  # never backwards
    assert (tmp_path / "progress" / "a.txt.offset").read_text().strip() == str(offset_of(4))
