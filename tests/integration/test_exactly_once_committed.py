"""A spout task killed between its PREPARE and its COMMIT, on LocalCluster, simulated time
(issue 41 item 3c): the relaunched task commits the checkpoint without the old process's
msg ids, so ``ack`` never comes for that transaction's records; it is told the committed
position instead (``SeekableSpout.committed``), from which a source commits its own
progress."""

from __future__ import annotations

import threading
from typing import Any

from squall import Config, Fields, LocalCluster, SeekableSpout, StatefulBolt, TopologyBuilder
from squall.runtime import clock
from squall.runtime.checkpoint import CHECKPOINT_STREAM
from squall.state import memory
from squall.testing import simulated_time
from tests.integration.eo_components import committed
from tests.integration.test_checkpoint_restarts import replace_worker

NAME = "eo-committed"
N = 200
STEP = 0.1


class Numbers(SeekableSpout):
    """Emits ``[n]`` for n in range(N), about 40 a simulated second; position: the next n.

    Its "source" is ``DONE``: ``ack`` marks one record done, ``committed(position)`` every
    record below the position (as a Kafka spout commits its group offset).
    """

    DONE: set[int] = set()
    TOLD: list[Any] = []
    lock = threading.Lock()

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        self.next = 0
        self.due = clock.monotonic()

    def next_tuple(self) -> None:
        now = clock.monotonic()
        if self.next < N and now >= self.due:
            self.due = now + 0.025
            self.collector.emit([self.next], msg_id=self.next)
            self.next += 1

    def position(self) -> int:
        return self.next

    def seek(self, position: int) -> None:
        self.next = int(position)

    def committed(self, position: int) -> None:
        with Numbers.lock:
            Numbers.TOLD.append(position)
            Numbers.DONE.update(range(int(position)))

    def ack(self, msg_id: Any) -> None:
        with Numbers.lock:
            Numbers.DONE.add(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))


class CountN(StatefulBolt):
    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        self.state.put(tup["n"], self.state.get(tup["n"], 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def kill_at_commit(cluster: LocalCluster) -> tuple[threading.Event, int]:
    """Halt the spout's worker, without cleanup, as the spout task receives a COMMIT: its
    PREPARE is staged and acked (the record says COMMITTING), its COMMIT never happens."""
    fired = threading.Event()
    running = cluster._get(NAME)
    (task_id,) = running.plan.component_tasks["source"]
    index = next(i for i, w in enumerate(running.workers) if task_id in w.tasks)
    task = running.workers[index].tasks[task_id]
    original = task.on_checkpoint

    def on_checkpoint(tup: Any) -> None:
        if tup.stream == CHECKPOINT_STREAM and tup.values[1] == "COMMIT" and task.uncommitted \
                and not fired.is_set():
            running.workers[index].stop(graceful=False)
            fired.set()
            return
        original(tup)

    task.on_checkpoint = on_checkpoint
    return fired, index


def test_a_spout_task_killed_between_prepare_and_commit_is_told_what_was_committed():
    memory.clear()
    Numbers.DONE, Numbers.TOLD = set(), []
    b = TopologyBuilder()
    b.set_spout("source", Numbers(), 1)
    b.set_bolt("count", CountN(), 1).shuffle_grouping("source")
    c = Config()
    c.set_num_workers(2)
    c.update({"topology.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 300,
              "topology.state.provider": "squall.state.memory.InMemoryStateProvider",
              "topology.message.timeout.secs": 3})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, c, b.create_topology())
        fired = index = None
        for _ in range(600):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            counted = committed(f"{NAME}/count/0")
            if fired is None and len(counted) >= N // 4:
                fired, index = kill_at_commit(cluster)
            elif fired is not None and fired.is_set() and index is not None:
                replace_worker(cluster, index, NAME)
                index = None
            if len(counted) == N and index is None:
                break
        cluster.advance_time(2, increment=STEP, quiet_timeout=0.3)  # the last commit's acks
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    assert fired is not None and fired.is_set(), "the kill did not happen"
    counted = committed(f"{NAME}/count/0")
    assert counted == {n: 1 for n in range(N)}, errors
    never = sorted(set(range(N)) - Numbers.DONE)
    assert never == [], f"{len(never)} records committed but never done at the source: {never[:10]}"
    assert len(Numbers.TOLD) == 1, Numbers.TOLD  # once, by the relaunched task
