"""A spout rescaled live on LocalCluster (issue 38): its tasks hand over, nothing else restarts.

At-least-once: the old tasks drain what they have pending (a tree failing meanwhile is read
again from the source's progress by the file's new owner) before the new ones start.
Exactly-once: a move whose checkpoint rolls back leaves the old tasks going on, and the next
try moves. What cannot move live says why (``spout_refusal``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from squall import Bolt, Config, LocalCluster, TopologyBuilder
from squall.connectors.files import FileSpout
from squall.runtime.live_plan import live_refusal, task_changes
from squall.runtime.live_spout import RetiredSpout, spout_plan
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.state import memory
from squall.testing import simulated_time
from tests.connectors.test_seekable_rescale import CountFirst, check_once, eo_conf
from tests.integration.eo_components import committed

NAME = "spout-live"
STEP = 0.1
FILES, LINES = 6, 100


class Seen(Bolt):
    """Records each line it acks; fails each line in ``FAIL`` the first time it sees it.

    It answers at its next tick (every simulated second), so trees stay pending at the spout.
    """

    lock = threading.Lock()
    acked: dict[str, int] = {}
    FAIL: set[str] = set()

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        self.held: list[Any] = []

    def execute(self, tup: Any) -> None:
        if not tup.is_tick():
            self.held.append(tup)
            return
        held, self.held = self.held, []
        for t in held:
            line = t.values[0]
            with Seen.lock:
                failing = line in Seen.FAIL
                Seen.FAIL.discard(line)
                if not failing:
                    Seen.acked[line] = Seen.acked.get(line, 0) + 1
            self.collector.fail(t) if failing else self.collector.ack(t)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def files(tmp_path: Any) -> tuple[Any, set[str]]:
    src = tmp_path / "in"
    src.mkdir()
    for f in range(FILES):
        (src / f"f{f}.txt").write_text("".join(f"{f}:{i}\n" for i in range(LINES)), encoding="utf-8")
    return src, {f"{f}:{i}" for f in range(FILES) for i in range(LINES)}


def file_spout(tmp_path: Any, src: Any) -> FileSpout:
    return FileSpout(src, "*.txt", progress=tmp_path / "progress", commit_interval_secs=0.2,
                     poll_secs=0.1, read_bytes=64)


def alo_conf() -> Config:
    c = Config()
    c.set_num_workers(2)
    c.set_max_spout_pending(20)
    c.update({"topology.message.timeout.secs": 5})
    return c


def test_an_at_least_once_spout_rescales_live_draining_its_old_tasks_and_loses_nothing(tmp_path):
    src, want = files(tmp_path)
    Seen.acked = {}
    # failed once each, some of them while their task drains: read again by the file's new owner
    Seen.FAIL = {f"{f}:{i}" for f in range(FILES) for i in range(0, LINES, 9)}
    b = TopologyBuilder()
    b.set_spout("source", file_spout(tmp_path, src), 2)
    b.set_bolt("sink", Seen(), 2).shuffle_grouping("source").add_configuration(
        "topology.tick.tuple.freq.secs", 1)
    records = []
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, alo_conf(), b.create_topology())
        workers = cluster.workers(NAME)
        sinks = {t: task for w in workers for t, task in w.tasks.items() if task.component == "sink"}
        old = {t: task for w in workers for t, task in w.tasks.items() if task.component == "source"}
        for target in (3, 2):
            while len(Seen.acked) < len(want) * len(records + [0]) // 3:
                cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            cluster.rebalance(NAME, parallelism={"source": target})
            for _ in range(300):
                cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
                rec = cluster.get_topology_info(NAME)["rescale"]
                if rec["status"] != "running":
                    break
            records.append(rec)
        deadline = time.monotonic() + 60
        while set(Seen.acked) != want and time.monotonic() < deadline:
            cluster.advance_time(1, increment=STEP, quiet_timeout=0.3)
        assert cluster.workers(NAME) == workers
        after = {t: task for w in workers for t, task in w.tasks.items()}
        assert all(after[t] is task for t, task in sinks.items())
        assert all(isinstance(after[t], RetiredSpout) for t in old)  # the first tasks retired
        retired = [task for task in after.values() if isinstance(task, RetiredSpout)]
        # every tree they had pending came back to them before they closed
        assert len(retired) == 5 and sum(task.dropped for task in retired) == 0
        info = cluster.get_topology_info(NAME)
        errors = [e["message"] for e in info["errors"]]
        assert len(info["components"]["source"]["tasks"]) == 2
        cluster.kill_topology(NAME)
    assert [(r["status"], r["live"], r["reason"]) for r in records] == [("done", True, None)] * 2, records
    assert [r["components"] for r in records] == [{"source": [2, 3]}, {"source": [3, 2]}]
    assert sorted(want - set(Seen.acked))[:10] == [], errors  # nothing lost
    assert not Seen.FAIL  # every planned failure struck


def test_a_spout_move_finishes_in_the_workers_with_nobody_asking_the_cluster(tmp_path):
    # the clock moves and the workers run, but no get_topology_info, advance_time or
    # rebalance looks at the move: the old tasks drain and close, the new ones start, on
    # their workers' own timers (at-least-once) or barriers (exactly-once)
    src, want = files(tmp_path)
    Seen.acked, Seen.FAIL = {}, set()
    b = TopologyBuilder()
    b.set_spout("source", file_spout(tmp_path, src), 2)
    b.set_bolt("sink", Seen(), 2).shuffle_grouping("source").add_configuration(
        "topology.tick.tuple.freq.secs", 1)
    with simulated_time() as clock, LocalCluster() as cluster:
        cluster.submit_topology(NAME, alo_conf(), b.create_topology())
        while len(Seen.acked) < len(want) // 4:
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
        cluster.rebalance(NAME, parallelism={"source": 3})
        deadline = time.monotonic() + 60
        while set(Seen.acked) != want and time.monotonic() < deadline:
            clock.advance(STEP)
            cluster.wait_quiet(0.3, raise_on_timeout=False)
        rec = cluster.get_topology_info(NAME)["rescale"]
        cluster.kill_topology(NAME)
    assert sorted(want - set(Seen.acked))[:10] == []
    assert (rec["status"], rec["live"]) == ("done", True), rec


def test_an_exactly_once_move_whose_checkpoint_rolls_back_leaves_the_old_tasks_then_moves(tmp_path):
    src, want = files(tmp_path)
    memory.clear()
    b = TopologyBuilder()
    b.set_spout("source", file_spout(tmp_path, src), 2)
    b.set_bolt("sink", CountFirst(), 1).shuffle_grouping("source")

    def counted() -> int:
        return len(committed(f"{NAME}/sink/0"))

    records = []
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, eo_conf(), b.create_topology())
        workers = cluster.workers(NAME)
        while counted() < len(want) // 4:
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
        cluster.rebalance(NAME, parallelism={"source": 3})
        # the sink fails its next data tuple: the move's checkpoint T cannot prepare
        sink = next(t for w in workers for t in w.tasks.values() if t.component == "sink")
        w = next(w for w in workers if sink.task_id in w.tasks)
        w.call(sink.alignment.fail_data).wait(10)
        for attempt in range(2):
            for _ in range(300):
                cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
                rec = cluster.get_topology_info(NAME)["rescale"]
                if rec["status"] != "running":
                    break
            records.append(rec)
            if attempt == 0:
                assert len(cluster.get_topology_info(NAME)["components"]["source"]["tasks"]) == 2
                cluster.rebalance(NAME, parallelism={"source": 3})
        deadline = time.monotonic() + 60
        while counted() < len(want) and time.monotonic() < deadline:
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
        cluster.advance_time(2, increment=STEP, quiet_timeout=0.5)
        assert cluster.workers(NAME) == workers
        info = cluster.get_topology_info(NAME)
        errors = [e["message"] for e in info["errors"]]
        assert len(info["components"]["source"]["tasks"]) == 3
        cluster.kill_topology(NAME)
    assert records[0]["status"] == "failed" and records[0]["live"] is True, records
    assert "rolled back" in records[0]["reason"] and "\n" not in records[0]["reason"]
    assert (records[1]["status"], records[1]["live"]) == ("done", True), records
    check_once(committed(f"{NAME}/sink/0"), want, errors)


def _plan(conf: dict, spouts: int = 2, threaded: bool = False) -> tuple[Any, dict, Any]:
    b = TopologyBuilder()
    decl = b.set_spout("source", FileSpout(".", "*.txt"), spouts)
    if threaded:
        decl.add_configuration("squall.task.threaded", True)
    b.set_bolt("sink", Seen(), 2).shuffle_grouping("source")
    merged = prepare_conf(conf, b.create_topology())
    topology = prepare_topology(b.create_topology(), merged)
    return topology, merged, make_plan(topology, merged)


def test_what_keeps_a_spout_from_moving_live_is_said_in_one_line():
    topology, conf, plan = _plan(dict(alo_conf()))

    def refusal(counts: dict, workers: int | None = None, spouts: bool = True) -> str | None:
        return live_refusal(topology, conf, plan, task_changes(plan, counts), workers, spouts=spouts)

    assert refusal({"source": 3}) is None
    assert refusal({"source": 3, "sink": 3}) == \
        "spout 'source': a spout rescales live alone (here with ['sink', 'source'])"
    assert refusal({"source": 3}, workers=3) == "spout 'source': a live spout move keeps the worker count"
    # a cluster that does not move spouts says so
    assert refusal({"source": 3}, spouts=False) == \
        "component 'source': a spout (this cluster rescales a spout by a restart)"
    # on Spark an at-least-once spout drains live too; inactive, only the exactly-once one
    # (no checkpoint runs to carry its move) restarts
    from types import SimpleNamespace

    from squall.spark.live_move import spark_refusal
    master = SimpleNamespace(plan=plan, conf=conf, active=True, worker_code={})
    assert spark_refusal(master, topology, task_changes(plan, {"source": 3}), None) is None
    master.active = False
    assert spark_refusal(master, topology, task_changes(plan, {"source": 3}), None) is None
    eo = SimpleNamespace(plan=plan, conf={**conf, "topology.guarantee": "exactly_once"}, active=True,
                         worker_code={})
    assert spark_refusal(eo, topology, task_changes(plan, {"source": 3}), None) is None
    eo.active = False
    assert spark_refusal(eo, topology, task_changes(plan, {"source": 3}), None) == \
        "the topology is inactive: no checkpoint runs to carry the move"
    topology, conf, plan = _plan(dict(alo_conf()), threaded=True)
    assert live_refusal(topology, conf, plan, task_changes(plan, {"source": 3}), None, spouts=True) \
        == "spout 'source': it runs on a thread of its own (squall.task.threaded)"


def test_a_spout_move_replaces_every_spout_task_with_new_ids_spread_over_the_workers():
    topology, conf, plan = _plan(dict(alo_conf()))
    old = plan.component_tasks["source"]
    new = spout_plan(plan, "source", 3)
    tasks = new.component_tasks["source"]
    assert len(tasks) == 3 and min(tasks) > max(plan.task_component)
    assert not set(old) & set(new.task_component)
    assert new.component_tasks["sink"] == plan.component_tasks["sink"]
    where = new.task_worker()
    assert sorted(where[t] for t in tasks) == [0, 0, 1] or sorted(where[t] for t in tasks) == [0, 1, 1]
    assert all(where[t] == w for t, w in plan.task_worker().items() if t not in old)


def test_an_at_least_once_spout_feeding_a_checkpointed_keyed_count_rescales_live():
    # at-least-once with stateful bolts: the barriers start at the bolts the spout feeds, not
    # at the spout, so its move needs no checkpoint; the count loses nothing
    from collections import Counter

    from squall.testing.invariants import tally
    from tests.integration.components import RECORD
    from tests.integration.eo_components import PartitionedSpout, sentences
    from tests.integration.test_exactly_once import NAME as EO_NAME
    from tests.integration.test_exactly_once import RATE, build, conf, expected
    from tests.integration.test_live_rescale_keyed import keyed_counts

    memory.clear()
    RECORD.clear()
    texts = sentences(5, 300)
    words, _ = expected(texts)
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(EO_NAME, conf("at_least_once"),
                                build(texts, spout=PartitionedSpout(texts, EO_NAME, rate=RATE)))
        workers = cluster.workers(EO_NAME)
        cluster.advance_time(1, increment=STEP, quiet_timeout=0.3)
        cluster.rebalance(EO_NAME, parallelism={"source": 3})
        deadline = time.monotonic() + 60
        while tally(words, Counter(keyed_counts())).lost and time.monotonic() < deadline:
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
        rec = cluster.get_topology_info(EO_NAME)["rescale"]
        assert cluster.workers(EO_NAME) == workers
        cluster.kill_topology(EO_NAME)
    assert (rec["status"], rec["live"], rec["reason"]) == ("done", True, None), rec
    assert tally(words, Counter(keyed_counts())).lost == []


class DropOnce(Bolt):
    """Acks each line, except that each line in ``DROP`` is dropped (neither acked nor failed)
    the first time it comes: its tree is lost, as with a worker SIGKILLed holding it."""

    lock = threading.Lock()
    acked: set[str] = set()
    DROP: set[str] = set()

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        line = tup.values[0]
        with DropOnce.lock:
            if line in DropOnce.DROP:
                DropOnce.DROP.discard(line)
                return
            DropOnce.acked.add(line)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def test_a_tree_lost_under_a_spout_task_added_live_times_out_and_is_replayed(tmp_path):
    # a spout task made by a live move rotates its pending trees as the first ones do: a
    # tree lost downstream fails after the message timeout and its line is read again (the
    # new tasks had no timeout timer: such a line stayed pending for ever, and on Spark a
    # worker SIGKILLed after a live move lost the lines in flight from them)
    src, want = files(tmp_path)
    DropOnce.acked = set()
    DropOnce.DROP = {f"{f}:{i}" for f in range(FILES) for i in (LINES - 10, LINES - 5)}
    b = TopologyBuilder()
    b.set_spout("source", file_spout(tmp_path, src), 2)
    b.set_bolt("sink", DropOnce(), 2).shuffle_grouping("source")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, alo_conf(), b.create_topology())
        cluster.rebalance(NAME, parallelism={"source": 3})  # at once: the new tasks read the drops
        for _ in range(300):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            rec = cluster.get_topology_info(NAME)["rescale"]
            if rec["status"] != "running":
                break
        deadline = time.monotonic() + 60
        while DropOnce.acked != want and time.monotonic() < deadline:
            cluster.advance_time(1, increment=STEP, quiet_timeout=0.3)
        failed = {t: f["failed"] for t, f in
                  cluster.get_topology_info(NAME)["components"]["source"]["by_task"].items()}
        cluster.kill_topology(NAME)
    assert (rec["status"], rec["live"]) == ("done", True), rec
    assert not DropOnce.DROP  # every planned drop struck
    lost = sorted(want - DropOnce.acked)
    assert not lost, f"{len(lost)} lines lost (trees never timed out): {lost[:12]}; failed by task {failed}"
