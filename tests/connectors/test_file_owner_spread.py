"""Which task reads which file (FileSpout, DataFrameSpout): numbered and dated names spread
evenly over the tasks, every file has exactly one owner, ``merge_positions`` agrees with the
reading side, and a file's progress is found by its new owner when the assignment changes."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from functools import partial

import pytest

from squall.connectors.files import FileSpout
from squall.connectors.spark import DataFrameSpout
from squall.runtime import clock
from tests.connectors.seeking import opened, pump, quiet

PARTS = [f"part-{i:05d}.txt" for i in range(40)]
DAYS = [f"events-{dt.date(2026, 11, 1) + dt.timedelta(days=i)}.log" for i in range(30)]
DATED_PARTS = [f"2026/11/{d:02d}/part-{p}.parquet" for d in range(1, 11) for p in range(4)]
HOSTS = [f"host-{i:02d}.log" for i in range(1, 25)]
FAMILIES = {"parts": PARTS, "days": DAYS, "dated_parts": DATED_PARTS, "hosts": HOSTS}


class Task:
    """Just what ``FileSpout.mine`` reads of an opened task."""

    def __init__(self, index: int, tasks: int) -> None:
        self.index, self.tasks = index, tasks


def file_owner(name: str, tasks: int) -> list[int]:
    """The tasks whose ``FileSpout.mine`` takes ``name``."""
    return [i for i in range(tasks) if FileSpout.mine(Task(i, tasks), name)]  # type: ignore[arg-type]


def segment_owner(name: str, tasks: int) -> list[int]:
    """The tasks whose ``DataFrameSpout._owns`` takes ``name``."""
    return [i for i in range(tasks) if DataFrameSpout._owns(name, i, tasks)]


def shares(owner, names: list[str], tasks: int) -> list[int]:
    count = Counter(o for name in names for o in owner(name, tasks))
    return [count.get(i, 0) for i in range(tasks)]


@pytest.mark.parametrize("owner", [file_owner, segment_owner], ids=["FileSpout", "DataFrameSpout"])
@pytest.mark.parametrize("tasks", [2, 3, 4, 8])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_numbered_and_dated_files_spread_evenly_over_the_tasks(owner, tasks, family):
    # old code, parts on 8 tasks: [2, 8, 8, 2, 8, 2, 2, 8]; days on 8: [8, 2, 0, 1, 2, 7, 8, 2]
    names = FAMILIES[family]
    got = shares(owner, names, tasks)
    assert sum(got) == len(names)
    assert min(got) >= 1, f"{family} on {tasks} tasks: {got}"
    assert max(got) <= 2 * min(got), f"{family} on {tasks} tasks: {got}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_spark_style_paths_of_one_directory_spread_evenly(family):
    # DataFrameSpout's segments are whole paths: the directory's digits are the same for all
    names = [f"file:///data/run-20261128/in/{n}" for n in FAMILIES[family]]
    got = shares(segment_owner, names, 8)
    assert min(got) >= 1 and max(got) <= 2 * min(got), got


@pytest.mark.parametrize("tasks", range(1, 17))
def test_every_file_has_exactly_one_owner_and_both_spouts_agree(tasks):
    names = [n for family in FAMILIES.values() for n in family] + ["a", "", "x" * 300, "9" * 5000,
                                                                 "straße-1.txt", "日本-２.log"]
    for name in names:
        owners = file_owner(name, tasks)
        assert len(owners) == 1, (name, owners)
        assert segment_owner(name, tasks) == owners, name


def test_the_owners_are_pinned_so_a_change_that_moves_files_is_deliberate():
    # a change of owner_of moves files between tasks at an upgrade (seek hands them over,
    # but a new owner may read a file before its old owner's seek: see sharing's docs)
    from squall.connectors.sharing import owner_of

    names = ["part-00000.txt", "part-00039.txt", "events-2026-11-01.log",
             "2026/11/28/part-0.parquet", "host-01.log", "alpha", ""]
    assert [owner_of(n, t) for n in names for t in (3, 8, 16)] == [
        1, 4, 9, 2, 5, 11, 1, 3, 6, 2, 5, 11, 0, 2, 4, 0, 1, 2, 0, 0, 0]
    with pytest.raises(ValueError, match="tasks must be at least 1, got 0"):
        owner_of("a", 0)


@pytest.mark.parametrize("spout", [FileSpout, DataFrameSpout])
@pytest.mark.parametrize("old, new", [(3, 8), (8, 3), (5, 5), (1, 7), (7, 1)])
def test_merge_positions_gives_each_file_to_exactly_its_reading_task(spout, old, new):
    names = PARTS + DAYS + HOSTS
    owner = file_owner if spout is FileSpout else segment_owner
    positions = [{n: len(n) for n in names if owner(n, old) == [i]} for i in range(old)]
    assert sorted(n for p in positions for n in p) == sorted(names)
    merged = [spout.merge_positions(positions, i, new) for i in range(new)]
    assert sorted(n for m in merged for n in m) == sorted(names)
    for i, m in enumerate(merged):
        assert all(owner(n, new) == [i] and offset == len(n) for n, offset in m.items())


# ---- a file's progress after its owner changes ----------------------------------------------

@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


def _file_spout(src, progress) -> FileSpout:
    return FileSpout(src, "*.txt", progress=progress, commit_interval_secs=0.5)


def _frame_spout(src, progress) -> DataFrameSpout:
    return DataFrameSpout(src, progress=progress, fields=("id",), engine="arrow",
                          commit_interval_secs=0.5)


def test_a_files_progress_is_found_by_its_new_owner_after_a_rescale(tmp_path, sim):
    # progress files are per file in one directory: whichever task owns a file reads its own
    src = tmp_path / "in"
    src.mkdir()
    for name in PARTS[:12]:
        (src / name).write_text("".join(f"{name} {k}\n" for k in range(5)), encoding="utf-8")
    progress = tmp_path / "progress"

    spout = partial(_file_spout, src, progress)

    first = spout()
    out = opened(first, index=0, tasks=1)
    assert pump(first, out, 12 * 5, sim)
    done = {}
    for values, msg_id in out.records():
        name, offset = msg_id
        if int(values[0].split()[1]) < 2:  # the first two lines of each file are done
            first.ack(msg_id)
            done[name] = max(done.get(name, 0), offset + len(values[0]) + 1)
    first.close()
    assert done and all(int((progress / f"{n}.offset").read_text()) == o for n, o in done.items())

    # three tasks now: each file is some task's, and that task starts it after the done lines
    seen: dict[str, list[int]] = {}
    for index in range(3):
        task = spout()
        out = opened(task, index=index, tasks=3)
        quiet(task, out, sim, calls=300)
        for values, (name, _) in out.records():
            seen.setdefault(name, []).append(int(values[0].split()[1]))
        task.close()
    assert seen == {n: ([2, 3, 4] if n in done else [0, 1, 2, 3, 4]) for n in PARTS[:12]}


def test_a_segments_progress_is_found_by_its_new_owner_after_a_rescale(tmp_path, sim):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "in"
    src.mkdir()
    for p in range(8):
        pq.write_table(pa.table({"id": [p * 10 + r for r in range(4)]}), src / f"part-{p:05d}.parquet")
    progress = tmp_path / "progress"

    spout = partial(_frame_spout, src, progress)

    first = spout()
    out = opened(first, index=0, tasks=1)
    assert pump(first, out, 32, sim)
    for values, msg_id in out.records():
        if values[0] % 10 < 2:  # the first two rows of each file are done
            first.ack(msg_id)
    first.close()

    seen: list[int] = []
    for index in range(3):
        task = spout()
        out = opened(task, index=index, tasks=3)
        quiet(task, out, sim, calls=300)
        seen += [values[0] for values, _ in out.records()]
        task.close()
    assert sorted(seen) == [p * 10 + r for p in range(8) for r in (2, 3)]


def test_the_owner_is_the_same_in_another_process_whatever_its_hash_seed(subprocess_env):
    import json
    import subprocess
    import sys

    code = ("import json, sys; "
            "from tests.connectors.test_file_owner_spread import file_owner; "
            "print(json.dumps([file_owner(n, t) for n in json.loads(sys.argv[1]) for t in (2, 3, 8)]))")
    names = PARTS + DAYS
    outputs = [json.loads(subprocess.run([sys.executable, "-c", code, json.dumps(names)], env=dict(
        subprocess_env, PYTHONHASHSEED=seed), capture_output=True, text=True, check=True).stdout)
        for seed in ("1", "2")]
    assert outputs[0] == outputs[1] == [file_owner(n, t) for n in names for t in (2, 3, 8)]


# ---- an upgrade: positions saved under the old assignment, the same task count ----------------
# A rescale merges the old tasks' positions (merge_positions); a restart at the same task count
# gives each task its own position, which may list files another task reads now. Those entries
# are handed over: the file's progress catches up to the committed offset (for its new owner to
# read from), and the old owner keeps no mark that a later commit could write back.

def moved(names: list[str], tasks: int) -> tuple[str, int, int]:
    """A file whose owner under ``stable_hash(name) % tasks`` (before) is not its owner now."""
    from squall.runtime.hashing import stable_hash

    for name in names:
        before, now = stable_hash(name) % tasks, file_owner(name, tasks)[0]
        if before != now:
            return name, before, now
    raise AssertionError("no file changed owner")


def test_after_an_upgrade_a_files_committed_position_reaches_its_new_owner(tmp_path, sim):
    src = tmp_path / "in"
    src.mkdir()
    lines = [f"line {k}\n" for k in range(6)]
    name, before, now = moved(PARTS, 2)
    (src / name).write_text("".join(lines), encoding="utf-8")
    progress = tmp_path / "progress"
    progress.mkdir()
    # the old run: lines 0-1 acked and written; 2-3 in a committed checkpoint, killed before
    # their acks were written
    (progress / f"{name}.offset").write_text(f"{len(''.join(lines[:2]))}\n")
    position = {name: len("".join(lines[:4]))}

    spout = partial(_file_spout, src, progress)

    old_owner = spout()
    old_out = opened(old_owner, index=before, tasks=2)
    old_owner.committed(position)  # the runtime's first recovery: committed, then seek
    old_owner.seek(position)
    new_owner = spout()
    out = opened(new_owner, index=now, tasks=2)
    new_owner.committed({})
    new_owner.seek({})
    assert [v for v, _ in quiet(new_owner, out, sim)] == [["line 4"], ["line 5"]]
    for _, msg_id in out.records():
        new_owner.ack(msg_id)
    sim.advance(1)
    quiet(new_owner, out, sim, calls=5)
    end = str(len("".join(lines)))
    assert (progress / f"{name}.offset").read_text().strip() == end
    assert quiet(old_owner, old_out, sim, calls=30) == []
    old_owner.close()  # writes nothing back over the new owner's progress
    assert (progress / f"{name}.offset").read_text().strip() == end
    assert old_owner.position() == {}


def test_after_an_upgrade_a_segments_committed_row_reaches_its_new_owner(tmp_path, sim):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from squall.connectors import arrow_io

    src = tmp_path / "in"
    src.mkdir()
    segment, before, now = moved([(src / f"part-{p:05d}.parquet").as_uri() for p in range(40)], 2)
    pq.write_table(pa.table({"id": list(range(6))}), arrow_io.file_path(segment))
    progress = tmp_path / "progress"

    spout = partial(_frame_spout, src, progress)

    # the old run: rows 0-1 acked and committed to the progress; 2-3 in a committed checkpoint
    first = spout()
    out = opened(first, index=0, tasks=1)
    assert pump(first, out, 2, sim)
    for _, msg_id in out.records():
        first.ack(msg_id)
    first.close()
    position = {segment: 4}

    old_owner = spout()
    old_out = opened(old_owner, index=before, tasks=2)
    new_owner = spout()
    out = opened(new_owner, index=now, tasks=2)
    old_owner.seek(position)
    new_owner.seek({})
    assert [v for v, _ in quiet(new_owner, out, sim)] == [[4], [5]]
    for _, msg_id in out.records():
        new_owner.ack(msg_id)
    sim.advance(1)
    quiet(new_owner, out, sim, calls=5)
    assert quiet(old_owner, old_out, sim, calls=30) == []
    old_owner.close()  # writes nothing back over the new owner's progress: the segment is done
    again = spout()
    out = opened(again, index=now, tasks=2)
    assert quiet(again, out, sim) == []
