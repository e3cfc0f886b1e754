"""RedisStreamSpout and FileSpout rescaled under exactly-once on LocalCluster, on simulated
time (issue 38 item 3): a rebalance changes the spout's task count (2 -> 3 -> 2, 3 -> 2 -> 3)
while the checkpoint's COMMIT is held at the spout tasks (so the sources' own commits, XACK
and progress files, lag the checkpoint), and every record is counted once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from squall import Config, LocalCluster, StatefulBolt, TopologyBuilder
from squall.connectors.files import FileSpout
from squall.connectors.redis import RedisStreamSpout
from squall.state import memory
from squall.testing import simulated_time
from tests.connectors.rescaling import hold_commits, rescale_live
from tests.integration.eo_components import committed

NAME = "eo-rescale"
STEP = 0.1
RECORDS = 600


class CountFirst(StatefulBolt):
    """How often each record (its first value) reached it, in its checkpointed state."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        key = str(tup.values[0])
        self.state.put(key, self.state.get(key, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def eo_conf() -> Config:
    c = Config()
    c.set_num_workers(2)
    c.set_max_spout_pending(20)  # slow enough that the moves happen while records wait
    c.update({"topology.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 300,
              "topology.state.provider": "squall.state.memory.InMemoryStateProvider",
              "topology.message.timeout.secs": 10})
    return c


def run(spout: Any, first: int, moves: tuple[int, ...]) -> tuple[dict, list[str]]:
    """The spout at ``first`` tasks, rebalanced to each of ``moves`` in turn, each move with
    COMMITs held at the spout tasks; the sink's committed counts, and the errors."""
    memory.clear()
    b = TopologyBuilder()
    b.set_spout("source", spout, first)
    b.set_bolt("sink", CountFirst(), 1).shuffle_grouping("source")

    def counted() -> int:
        return len(committed(f"{NAME}/sink/0"))

    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, eo_conf(), b.create_topology())
        todo = list(moves)
        held: threading.Event | None = None
        deadline = time.monotonic() + 60
        while (todo or counted() < RECORDS) and time.monotonic() < deadline:
            if held is not None and held.is_set():
                cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)  # every task's
                cluster.rebalance(NAME, parallelism={"source": todo.pop(0)})
                held = None
            elif held is None and todo and counted() >= RECORDS * (len(moves) - len(todo) + 1) // 4:
                held = hold_commits(cluster, NAME, "source")
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
        cluster.advance_time(3, increment=STEP, quiet_timeout=0.5)  # later checkpoints commit too
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    assert not todo, f"the rebalances did not all happen: {counted()} counted; {errors}"
    return committed(f"{NAME}/sink/0"), errors


def check_once(got: dict, want: set[str], errors: list[str]) -> None:
    assert set(got) == want, (sorted(want - set(got))[:10], sorted(set(got) - want)[:10], errors)
    assert sorted(k for k, n in got.items() if n > 1) == [], errors


MOVES = pytest.mark.parametrize("first, moves", [(2, (3, 2)), (3, (2, 3))], ids=["2-3-2", "3-2-3"])


@MOVES
def test_a_rescaled_redis_stream_spout_counts_every_entry_once(redis_server, redis_client, first, moves):
    for i in range(0, RECORDS, 100):
        pipe = redis_client.pipeline()
        for n in range(i, i + 100):
            pipe.xadd("in", {"n": str(n)})
        pipe.execute()
    spout = RedisStreamSpout("in", "g", ("n",), port=redis_server.port, batch=8)
    got, errors = run(spout, first, moves)
    check_once(got, {str(n) for n in range(RECORDS)}, errors)
    assert redis_client.xpending("in", "g")["pending"] == 0  # every entry acked in the end


@MOVES
def test_a_rescaled_file_spout_counts_every_line_once(tmp_path, first, moves):
    src = tmp_path / "in"
    src.mkdir()
    for f in range(6):
        (src / f"f{f}.txt").write_text("".join(f"{f}:{i}\n" for i in range(RECORDS // 6)), encoding="utf-8")
    spout = FileSpout(src, "*.txt", progress=tmp_path / "progress", commit_interval_secs=0.2,
                      poll_secs=0.1, read_bytes=64)
    got, errors = run(spout, first, moves)
    check_once(got, {f"{f}:{i}" for f in range(6) for i in range(RECORDS // 6)}, errors)


def run_live(spout: Any, first: int, moves: tuple[int, ...]) -> tuple[dict, list[str], list[dict]]:
    """As ``run``, each move live (the spout's acks held, so its source lags the checkpoints);
    also the moves' ``rescale`` records. The workers and the sink's task stay the same objects."""
    memory.clear()
    b = TopologyBuilder()
    b.set_spout("source", spout, first)
    b.set_bolt("sink", CountFirst(), 1).shuffle_grouping("source")

    def counted() -> int:
        return len(committed(f"{NAME}/sink/0"))

    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, eo_conf(), b.create_topology())
        workers = cluster.workers(NAME)
        sink = {t: task for w in workers for t, task in w.tasks.items() if task.component == "sink"}
        records = rescale_live(
            cluster, NAME, "source", list(moves), lambda done: counted() >= RECORDS * (done + 1) // 4,
            lambda: cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3),
            time.monotonic() + 60)
        cluster.advance_time(3, increment=STEP, quiet_timeout=0.5)  # later checkpoints commit too
        assert cluster.workers(NAME) == workers
        assert all(w.tasks[t] is task for w in workers for t, task in sink.items() if t in w.tasks)
        info = cluster.get_topology_info(NAME)
        errors = [e["message"] for e in info["errors"]]
        assert len(info["components"]["source"]["tasks"]) == moves[-1]
        cluster.kill_topology(NAME)
    return committed(f"{NAME}/sink/0"), errors, records


@MOVES
def test_a_file_spout_rescales_live_counting_every_line_once(tmp_path, first, moves):
    src = tmp_path / "in"
    src.mkdir()
    for f in range(6):
        (src / f"f{f}.txt").write_text("".join(f"{f}:{i}\n" for i in range(RECORDS // 6)), encoding="utf-8")
    spout = FileSpout(src, "*.txt", progress=tmp_path / "progress", commit_interval_secs=0.2,
                      poll_secs=0.1, read_bytes=64)
    got, errors, records = run_live(spout, first, moves)
    assert [(r["status"], r["live"], r["reason"]) for r in records] == [("done", True, None)] * 2, records
    assert [r["components"]["source"] for r in records] == [[first, moves[0]], list(moves)]
    check_once(got, {f"{f}:{i}" for f in range(6) for i in range(RECORDS // 6)}, errors)


@MOVES
def test_a_redis_stream_spout_rescales_live_counting_every_entry_once(redis_server, redis_client, first,
                                                                      moves):
    for i in range(0, RECORDS, 100):
        pipe = redis_client.pipeline()
        for n in range(i, i + 100):
            pipe.xadd("in", {"n": str(n)})
        pipe.execute()
    spout = RedisStreamSpout("in", "g", ("n",), port=redis_server.port, batch=8)
    got, errors, records = run_live(spout, first, moves)
    assert [(r["status"], r["live"], r["reason"]) for r in records] == [("done", True, None)] * 2, records
    check_once(got, {str(n) for n in range(RECORDS)}, errors)


def test_redis_merge_positions_keeps_each_consumer_with_one_task():
    merge = RedisStreamSpout.merge_positions
    # 3 -> 2: consumer 2 goes to task 0 with its position
    assert merge(["5-0", "6-0", "7-0"], 0, 2) == {"0": "5-0", "2": "7-0"}
    assert merge(["5-0", "6-0", "7-0"], 1, 2) == "6-0"
    # a task that never committed keeps its consumer, from the start
    assert merge(["5-0", "6-0", None], 0, 2) == {"0": "5-0", "2": "0-0"}
    # 2 -> 3: consumer 2 returns to task 2 with the position task 0 kept for it
    assert merge([{"0": "8-0", "2": "7-0"}, "9-0"], 2, 3) == "7-0"
    assert merge([{"0": "8-0", "2": "7-0"}, "9-0"], 0, 3) == "8-0"
    assert merge([None, None], 2, 3) == "0-0"
