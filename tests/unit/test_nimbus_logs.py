"""read_log: whole lines, tails, offsets to follow from, one worker's lines."""

from __future__ import annotations

from squall.nimbus.logs import read_log


def test_tail_offset_and_partial_lines(tmp_path):
    log = tmp_path / "t-1.log"
    log.write_bytes(b"one\ntwo\nthree\nfour")  # "four" is still being written
    page = read_log(log)
    assert page["text"] == "one\ntwo\nthree\n" and page["offset"] == 14 and page["size"] == 18
    with open(log, "ab") as f:
        f.write(b" done\nfive\n")
    assert read_log(log, page["offset"])["text"] == "four done\nfive\n"
    tail = read_log(log, limit=12)  # a tail never starts mid-line
    assert tail["text"] == "five\n"


def test_a_shorter_file_was_replaced(tmp_path):
    log = tmp_path / "t-1.log"
    log.write_bytes(b"new\n")
    assert read_log(log, 1000)["text"] == "new\n"


def test_one_workers_lines(tmp_path):
    log = tmp_path / "t-1.log"
    log.write_text("x squall worker pid 12 INFO a\nx squall worker pid 123 INFO b\n"
                   "x squall master t pid 9 c\n")
    assert read_log(log, pid=12)["text"] == "x squall worker pid 12 INFO a\n"
    assert read_log(log, pid=123)["text"] == "x squall worker pid 123 INFO b\n"


def test_the_size_is_never_short_of_the_offset_when_the_log_grows_during_the_read(tmp_path, monkeypatch):
    # the file's size was taken, then a worker wrote more before the read (make test's UI run)
    log = tmp_path / "t-1.log"
    log.write_bytes(b"one\ntwo\nthree\n")
    monkeypatch.setattr("squall.nimbus.logs.os.path.getsize", lambda path: 4)
    page = read_log(log, 0)
    assert page["text"] == "one\ntwo\nthree\n" and page["offset"] == 14
    assert page["offset"] <= page["size"] == 14
