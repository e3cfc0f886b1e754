"""A worker of a stateful topology restarted in each checkpoint phase, on LocalCluster.

As a gray upgrade or hot deploy replaces a worker: its thread stops without cleanup, the
frames queued to it are lost, and a new worker with the same index and tasks starts (its
spouts reopen, its stateful tasks wait for INITSTATE). The restart happens while the
checkpoint spout has one action in flight: INITSTATE, PREPARE, COMMIT or ROLLBACK (a
ROLLBACK, and the INITSTATE after it, are first brought about by restarting the other
worker), on the checkpoint
spout's worker or on the other one. Afterwards the topology must commit a new checkpoint,
and every stateful task must initialise. The bolt dedupes nothing: it keeps, per key, every
sequence number it applied, repeats included, so the committed state shows how often each
message was applied. Every message must be there (nothing acked is missing), and none
applied more often than the spouts emitted it: a message is applied again only when it was
replayed, after a commit that held it whose acks the restart lost (RELIABILITY D7,
at-least-once: a restart with a COMMIT in flight, or with the acks a commit released still
on their way, shows a few such repeats).
Time is simulated, so the checkpoint interval and message timeouts move only when the
test says.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from squall import Config, Fields, LocalCluster, StatefulBolt, TopologyBuilder
from squall.api.components import Bolt
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, Action, Phase
from squall.runtime.stateful import component_items
from squall.runtime.worker import Worker
from squall.state import load_provider, memory
from squall.testing import simulated_time
from squall.testing.invariants import SequenceSpout, check
from tests.integration.components import RECORD, record

NAME = "ckr"
KEYS, COUNT = 4, 40
STEP = 0.1  # simulated seconds per step


class Relay(Bolt):
    """Passes ``[key, seq]`` on, anchored: a stateless stage the checkpoint crosses."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup[0], tup[1]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("key", "seq"))


class EmitCounting(SequenceSpout):
    """A ``SequenceSpout`` that records each emit (replays and re-emits after a restart too)."""

    def next_tuple(self) -> None:
        if self.todo:
            record("ckr.emitted", self.todo[-1])  # the message it emits next
        super().next_tuple()


class SeqCount(StatefulBolt):
    """Keeps, per key, every sequence number applied, in order, repeats included."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.state = None

    def init_state(self, state):
        self.state = state

    def execute(self, tup):
        key, seq = tup[0], tup[1]
        self.state.put(key, [*self.state.get(key, []), seq])
        self.collector.ack(tup)


def build(out: str):
    b = TopologyBuilder()
    b.set_spout("seq", EmitCounting(out, keys=KEYS, count=COUNT), 2)
    b.set_bolt("relay", Relay(), 2).shuffle_grouping("seq")
    b.set_bolt("count", SeqCount(), 2).fields_grouping("relay", Fields("key"))
    return b.create_topology()


def conf() -> Config:
    c = Config()
    c.set_num_workers(2)
    c.set_max_spout_pending(8)  # acks wait for commits: data is in flight at every checkpoint
    c.update({"topology.state.checkpoint.interval.ms": 500, "topology.message.timeout.secs": 5,
              "topology.state.provider": "squall.state.memory.InMemoryStateProvider"})
    return c


def stop_worker(cluster: LocalCluster, index: int) -> None:
    """Ask worker ``index`` to halt at its next round, without cleanup (a crash)."""
    cluster._get(NAME).workers[index].stop(graceful=False)


def replace_worker(cluster: LocalCluster, index: int, name: str = NAME) -> None:
    """Once worker ``index`` of ``name`` halted, start a new one in its place; frames sent to it are lost."""
    running = cluster._get(name)
    assert running.workers[index].join(30), "the old worker did not stop"
    running.hub.queues[index].clear()  # what was sent to the dead process is gone
    new = Worker(topology_name=name, topology=running.topology, conf=running.conf, plan=running.plan,
                 index=index, transport=running.hub.endpoint(index), errors=running.errors,
                 active=True, clock=cluster._clock)
    new.start()
    new.started.wait(30)
    assert new.start_error is None, new.start_error
    running.workers[index] = new


def restart_worker(cluster: LocalCluster, index: int) -> None:
    """Replace worker ``index`` as a crashed process is replaced."""
    stop_worker(cluster, index)
    replace_worker(cluster, index)


class Trap:
    """Calls ``fire`` on the checkpoint spout's thread right after it emits ``action``."""

    def __init__(self, cluster: LocalCluster, action: Action, fire) -> None:
        self.fired = threading.Event()
        plan = cluster._get(NAME).plan
        (task,) = plan.component_tasks[CHECKPOINT_SPOUT]
        spout = task_of(cluster, task).spout
        original = spout.next_tuple

        def next_tuple() -> None:
            original()
            flight = spout._coordinator.in_flight
            if not self.fired.is_set() and flight is not None and flight[1] is action:
                fire()  # before the round flushes the new checkpoint tuple to the other worker
                self.fired.set()

        spout.next_tuple = next_tuple  # the task calls the instance's attribute


def task_of(cluster: LocalCluster, task_id: int):
    for w in cluster.workers(NAME):
        if task_id in w.tasks:
            return w.tasks[task_id]
    raise AssertionError(f"task {task_id} runs nowhere")


def spout_worker(cluster: LocalCluster) -> int:
    plan = cluster._get(NAME).plan
    (task,) = plan.component_tasks[CHECKPOINT_SPOUT]
    return next(w for w in range(plan.num_workers) if task in plan.worker_tasks(w))


def coordinator(cluster: LocalCluster):
    plan = cluster._get(NAME).plan
    (task,) = plan.component_tasks[CHECKPOINT_SPOUT]
    spout = task_of(cluster, task).spout
    return spout._durable, spout._coordinator


def advance_until(cluster: LocalCluster, what, secs: float, why: str) -> None:
    for _ in range(int(secs / STEP)):
        if what():
            return
        cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.5)
    assert what(), f"{why} within {secs} simulated seconds; record and coordinator: {coordinator(cluster)}"


def in_flight(cluster: LocalCluster, action: Action) -> bool:
    flight = coordinator(cluster)[1].in_flight
    return flight is not None and flight[1] is action


def committed(c: Config) -> dict:
    seen: dict = {}
    for _, key, seqs in component_items(load_provider(c), c, NAME, "count"):
        assert key not in seen, f"key {key} kept by two namespaces"
        seen[key] = seqs
    return seen


@pytest.mark.parametrize("side", ["spout-worker", "other-worker"])
@pytest.mark.parametrize("phase", [Action.INITSTATE, Action.PREPARE, Action.COMMIT, Action.ROLLBACK])
def test_a_worker_restarted_in_each_checkpoint_phase_loses_nothing_and_repeats_only_replays(
        phase, side, tmp_path):
    memory.clear()
    out = str(tmp_path / "out")
    c = conf()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, c, build(out))
        home = spout_worker(cluster)
        target = home if side == "spout-worker" else 1 - home
        if phase in (Action.ROLLBACK, Action.INITSTATE):
            # a restarted stateful task fails the next PREPARE: the spout rolls back, then
            # sends INITSTATE (the first INITSTATE, at submit, is over before a trap is set)
            advance_until(cluster, lambda: coordinator(cluster)[0].phase is Phase.COMMITTED
                          and coordinator(cluster)[0].txid > 0 and not coordinator(cluster)[1].recovering,
                          30, "a first commit")
            restart_worker(cluster, 1 - home)
        if target == home:  # its thread cannot wait for itself: it halts, then is replaced here
            trap = Trap(cluster, phase, lambda: stop_worker(cluster, home))
        else:
            trap = Trap(cluster, phase, lambda: restart_worker(cluster, target))
        record_at_restart = coordinator(cluster)[0]
        advance_until(cluster, trap.fired.is_set, 30, f"{phase} emitted")
        if target == home:
            replace_worker(cluster, home)

        def settled() -> bool:
            record, coord = coordinator(cluster)
            stateful = [task_of(cluster, t) for t in cluster._get(NAME).plan.component_tasks["count"]]
            return (record.phase is Phase.COMMITTED and record.txid > record_at_restart.txid
                    and not coord.recovering and all(t.initialized for t in stateful)
                    and not check(out, KEYS, COUNT).unacked)

        advance_until(cluster, settled, 120, "every message acked and a new checkpoint committed")
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    assert check(out, KEYS, COUNT).unacked == []  # every message acked (after its commit)
    applied = Counter((key, seq) for key, seqs in committed(c).items() for seq in seqs)
    emitted = Counter(RECORD["ckr.emitted"])
    assert set(applied) == {(k, s) for k in range(KEYS) for s in range(COUNT)}, errors  # none lost
    over = {m: (n, emitted[m]) for m, n in applied.items() if n > emitted[m]}
    assert over == {}, f"applied more often than emitted (applied, emitted): {over}; {errors}"
