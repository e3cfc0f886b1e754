"""FileSpout on a LocalCluster: every line once, appended lines and new files, restarts
resuming where acking left off, a SIGKILL mid-run, truncation."""

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from squall import LocalCluster
from squall.connectors.files import FileSpout
from tests.connectors.components import RECORD
from tests.connectors.file_topology import build
from tests.connectors.test_redis import conf, wait_for


def write(path: Path, lines, mode="w"):
    with open(path, mode, encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def make_files(directory: Path, files=3, lines=100):
    directory.mkdir(parents=True, exist_ok=True)
    expected = []
    for f in range(files):
        rows = [f"f{f} line {i}" for i in range(lines)]
        write(directory / f"part-{f}.txt", rows)
        expected += rows
    return expected


def sunk(out: Path) -> Counter:
    c = Counter()
    for p in out.glob("*.txt"):
        c.update(p.read_text(encoding="utf-8").splitlines())
    return c


def offsets(progress: Path) -> dict:
    return {p.name: int(p.read_text()) for p in progress.glob("*.offset")}


def test_every_line_once_then_appended_lines_and_new_files(tmp_path):
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    expected = make_files(src)
    write(src / "ignored.csv", ["not matched"])
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf(), build(src, progress, out))
        assert wait_for(lambda: len(RECORD["sink"]) >= 300)
        with open(src / "part-0.txt", "a", encoding="utf-8") as f:
            f.write("appended 1\nappended 2\npartial")  # the last line is not finished yet
            f.flush()
            assert wait_for(lambda: len(RECORD["sink"]) >= 302)
            time.sleep(0.3)
            assert "partial" not in RECORD["sink"]
            f.write(" now done\n")
        write(src / "part-9.txt", ["new file"])
        assert wait_for(lambda: len(RECORD["sink"]) >= 304)
        sizes = {p.name + ".offset": p.stat().st_size for p in src.glob("*.txt")}
        assert wait_for(lambda: offsets(progress) == sizes)
        gauge = cluster.get_topology_info("files")["components"]["files"]["metrics"]["lag"]
        assert wait_for(lambda: cluster.get_topology_info("files")["components"]["files"]["metrics"]
                        ["lag"]["sum"] == 0)
    assert set(gauge["values"]) == {1, 2}
    assert sunk(out) == Counter(expected + ["appended 1", "appended 2", "partial now done", "new file"])


def test_a_restart_resumes_where_acking_left_off(tmp_path):
    # run 1 never acks one line of part-1: its offset stays below that line, while the other
    # files are committed to their ends; run 2 replays part-1 from that line only
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    expected = make_files(src)
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf(), build(src, progress, out, hold={"f1 line 40"}))
        assert wait_for(lambda: len(RECORD["sink"]) >= 299)
        line_40 = len("".join(f"f1 line {i}\n" for i in range(40)))
        assert wait_for(lambda: offsets(progress).get("part-1.txt.offset") == line_40)
        cluster.kill_topology("files")
    sizes = {p.name: p.stat().st_size for p in src.glob("*.txt")}
    assert offsets(progress) == {"part-0.txt.offset": sizes["part-0.txt"],
                                 "part-1.txt.offset": line_40,
                                 "part-2.txt.offset": sizes["part-2.txt"]}
    RECORD.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf(), build(src, progress, out))
        assert wait_for(lambda: len(RECORD["sink"]) >= 60)
        assert wait_for(lambda: offsets(progress)["part-1.txt.offset"] == sizes["part-1.txt"])
        time.sleep(0.2)
    # run 2 read part-1 from line 40 on: line 40 for the first time, 41..99 again
    assert sorted(RECORD["sink"]) == sorted(f"f1 line {i}" for i in range(40, 100))
    total = sunk(out)
    assert set(total) == set(expected)
    assert sum(total.values()) - len(expected) == 59  # duplicates: acked after the gap


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigkill_mid_run_then_restart_loses_nothing(tmp_path, subprocess_env):
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    expected = make_files(src, files=4, lines=1000)
    cmd = [sys.executable, "-m", "tests.connectors.file_topology", str(src), str(progress), str(out)]
    proc = subprocess.Popen(cmd, env=subprocess_env)
    try:
        assert wait_for(lambda: sum(sunk(out).values()) >= 500, timeout=60)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = sum(sunk(out).values())
    assert first < len(expected), "the kill came too late to test anything"
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf(), build(src, progress, out))
        assert wait_for(lambda: set(sunk(out)) == set(expected), timeout=60)
        sizes = {p.name + ".offset": p.stat().st_size for p in src.glob("*.txt")}
        assert wait_for(lambda: offsets(progress) == sizes)
    total = sunk(out)
    duplicates = sum(total.values()) - len(expected)
    print(f"after SIGKILL at {first}/{len(expected)} lines: {duplicates} duplicates")
    assert set(total) == set(expected)
    # at most what was in flight or acked but not yet committed (0.1 s of commits) at the kill
    assert 0 <= duplicates < 1000


def test_a_truncated_file_is_reported_and_skipped(tmp_path):
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    make_files(src, files=2, lines=50)
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf(), build(src, progress, out))
        assert wait_for(lambda: len(RECORD["sink"]) >= 100)
        write(src / "part-0.txt", ["short"])
        write(src / "part-1.txt", ["more"], mode="a")
        assert wait_for(lambda: "more" in RECORD["sink"])
        assert wait_for(lambda: any("part-0.txt has 6 bytes, fewer than" in e["message"]
                                    for e in cluster.get_topology_info("files")["errors"]))
        time.sleep(0.2)
    assert "short" not in RECORD["sink"]


def test_e8_a_truncated_file_with_on_truncate_restart_is_reported_and_read_again(tmp_path):
    """RELIABILITY E8, the other policy: a replaced file is read from its start, once."""
    src, progress, out = tmp_path / "in", tmp_path / "progress", tmp_path / "out"
    make_files(src, files=1, lines=50)
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf(), build(src, progress, out, on_truncate="restart"))
        assert wait_for(lambda: len(RECORD["sink"]) >= 50)
        write(src / "part-0.txt", ["new first", "new second"])  # replaced by a shorter file
        assert wait_for(lambda: "new second" in RECORD["sink"])
        assert wait_for(lambda: any("part-0.txt has" in e["message"] and "reading it again from the start"
                                    in e["message"] for e in cluster.get_topology_info("files")["errors"]))
        assert wait_for(lambda: offsets(progress) == {"part-0.txt.offset": len("new first\nnew second\n")})
    assert RECORD["sink"].count("new first") == 1 and RECORD["sink"].count("new second") == 1
    assert sorted(sunk(out).values()) == [1] * 52  # the 50 old lines and the 2 new, each once


def test_bad_arguments_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"on_truncate must be one of \('skip', 'restart'\), got 'x'"):
        FileSpout(tmp_path, on_truncate="x")
    spout = FileSpout(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"is not a directory"):
        spout.open({}, None, None)
