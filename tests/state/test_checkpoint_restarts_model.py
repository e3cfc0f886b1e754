"""The checkpoint protocol under restarts, every interleaving, on a deterministic model.

The model runs the real ``CheckpointSpout`` (its record in the in-memory provider), the
real ``Barrier`` in every bolt and the real ``StatefulBoltTask.checkpoint`` of each stateful
task on its real state, on simulated time. What it models is the rest of a cluster: tuple
delivery in a chosen order, the tuple trees of the checkpoint tuples (acked when every
copy is acked, failed when one copy fails, timed out after the message timeout) and the
loss of a worker: its tasks start again empty and the copies queued to them are lost.

Topology: ``$checkpointspout`` -> forwarders S1, S2 (a stateless bolt) -> stateful C1, C2
(each reads both forwarders). Worker A runs the checkpoint spout, S1 and C1; worker B runs
S2 and C2. Each case restarts worker A, worker B or both in the middle of the first
emission of one action, after ``k`` of its copies were delivered, with the forwarders
served in one order before the restart and in one order after. Every case must reach a
new committed checkpoint with every stateful task initialised and its committed txid
equal to the spout's record.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from squall.api.tuple import MessageId
from squall.runtime import clock as runtime_clock
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, Action, Barrier, Phase, TxState
from squall.runtime.checkpoint_spout import RECORD_KEY, CheckpointSpout
from squall.runtime.stateful import StatefulBoltTask
from squall.state import memory
from tests.state.spout_context import spout_context

TOPOLOGY = "ckm"
CONF = {"topology.state.provider": "squall.state.memory.InMemoryStateProvider",
        "topology.state.checkpoint.interval.ms": 500}
TIMEOUT = 5.0  # topology.message.timeout.secs
TICK = 0.1
SPOUT = CHECKPOINT_SPOUT
FORWARDERS = ("S1", "S2")
STATEFUL = ("C1", "C2")
DOWN = {SPOUT: FORWARDERS, "S1": STATEFUL, "S2": STATEFUL, "C1": (), "C2": ()}
TASK_ID = {SPOUT: 0, "S1": 1, "S2": 2, "C1": 3, "C2": 4}
WORKERS = {"A": (SPOUT, "S1", "C1"), "B": ("S2", "C2")}


@dataclass
class Copy:
    """One copy of a checkpoint tuple on its way to ``dst``."""

    dst: str
    src: str
    txid: int
    action: str
    root: int

    @property
    def task(self) -> int:
        return TASK_ID[self.src]

    @property
    def values(self) -> list:
        return [self.txid, self.action]

    @property
    def id(self) -> MessageId:
        return MessageId({self.root: 1})


class Bolt:
    """A stateful bolt's hooks; ``faults`` names hooks that raise once."""

    def __init__(self, faults: set[str]) -> None:
        self.faults = faults
        self.inits = 0

    def _hook(self, name: str) -> None:
        if name in self.faults:
            self.faults.discard(name)
            raise RuntimeError(f"injected fault in {name}")

    def init_state(self, state: Any) -> None:
        self.inits += 1

    def pre_prepare(self, txid: int) -> None:
        self._hook("pre_prepare")

    def pre_commit(self, txid: int) -> None:
        self._hook("pre_commit")

    def pre_rollback(self) -> None:
        self._hook("pre_rollback")


class Model:
    """A small cluster of the topology above; see the module docstring."""

    def __init__(self, clock: Any, faults: set[str]) -> None:
        self.clock = clock
        self.faults = faults
        self.queue: deque[Copy] = deque()
        self.trees: dict[int, dict] = {}  # root -> pending copies, msg id, emit time, spout
        self.roots = itertools.count(1)
        self.errors: list[str] = []
        self.order = FORWARDERS
        self.delivered = 0  # copies delivered so far
        self.tasks: dict[str, Any] = {}
        for name in DOWN:
            self._start(name)

    # ---- tasks ------------------------------------------------------------------------

    def _start(self, name: str) -> None:
        if name == SPOUT:
            spout = CheckpointSpout()
            context = spout_context(TOPOLOGY)
            spout.open(CONF, context, SimpleNamespace(emit=self._spout_emit, report_error=self._error))
            self.tasks[name] = spout
            return
        barrier = Barrier(1 if name in FORWARDERS else len(FORWARDERS))
        if name in FORWARDERS:
            self.tasks[name] = SimpleNamespace(barrier=barrier)
            return
        index = STATEFUL.index(name)
        context = SimpleNamespace(
            topology_name=TOPOLOGY, component_id="count", task_id=TASK_ID[name],
            get_this_component_tasks=lambda: [TASK_ID[c] for c in STATEFUL],
            get_this_task_index=lambda: index)
        self.tasks[name] = SimpleNamespace(
            barrier=barrier, bolt=Bolt(self.faults), conf=CONF, context=context, state=None,
            initialized=False, buffered=[], pending=[], prepared=[],
            collector=SimpleNamespace(release=lambda tuples, ok: None),
            host=SimpleNamespace(report_error=lambda task, e: self._error(e)))

    def restart(self, worker: str) -> None:
        """Lose ``worker``: its tasks start again, the copies queued to them are gone."""
        names = WORKERS[worker]
        self.queue = deque(c for c in self.queue if c.dst not in names)
        for name in names:
            self._start(name)

    def _error(self, e: BaseException) -> None:
        self.errors.append(str(e))

    # ---- tuple trees ------------------------------------------------------------------

    def _spout_emit(self, values: list, stream: str, msg_id: Any) -> None:
        root = next(self.roots)
        self.trees[root] = {"pending": 0, "msg_id": msg_id, "at": self.clock.monotonic(),
                            "spout": self.tasks[SPOUT]}
        self._send(SPOUT, values, root)

    def _send(self, src: str, values: list, root: int) -> None:
        targets = DOWN[src] if src != SPOUT else self.order
        tree = self.trees.get(root)
        if tree is not None:
            tree["pending"] += len(targets)
        self.queue.extend(Copy(dst, src, values[0], values[1], root) for dst in targets)

    def _ack(self, copy: Copy) -> None:
        tree = self.trees.get(copy.root)
        if tree is None:
            return
        tree["pending"] -= 1
        if tree["pending"] == 0:
            del self.trees[copy.root]
            if tree["spout"] is self.tasks[SPOUT]:  # a restarted spout knows no older root
                tree["spout"].ack(tree["msg_id"])

    def _fail(self, copy: Copy) -> None:
        tree = self.trees.pop(copy.root, None)
        if tree is not None and tree["spout"] is self.tasks[SPOUT]:
            tree["spout"].fail(tree["msg_id"])

    def _expire(self) -> None:
        now = self.clock.monotonic()
        for root, tree in list(self.trees.items()):
            if now - tree["at"] >= TIMEOUT:
                del self.trees[root]
                if tree["spout"] is self.tasks[SPOUT]:
                    tree["spout"].fail(tree["msg_id"])

    # ---- delivery ---------------------------------------------------------------------

    def deliver_one(self) -> None:
        """Deliver the oldest queued copy, as ``BoltTask`` handles a checkpoint tuple."""
        copy = self.queue.popleft()
        self.delivered += 1
        task = self.tasks[copy.dst]
        done, superseded = task.barrier.add(copy.txid, copy.action, copy.task, copy)
        for old in superseded:
            self._fail(old)
        if not done:
            return
        ok = True
        if copy.dst in STATEFUL:
            ok = StatefulBoltTask.checkpoint(task, copy.txid, Action(copy.action))
        if ok:
            for first in done[:1]:  # anchored to every copy: they share one root
                self._send(copy.dst, copy.values, first.root)
            for c in done:
                self._ack(c)
        else:
            for c in done:
                self._fail(c)

    def step(self) -> None:
        """Deliver everything queued, ask the spout, deliver again, then let time pass."""
        while self.queue:
            self.deliver_one()
        self.tasks[SPOUT].next_tuple()
        while self.queue:
            self.deliver_one()
        self.clock.advance(TICK)
        self._expire()

    # ---- what the test reads ----------------------------------------------------------

    def spout_state(self) -> tuple[TxState, Any]:
        spout = self.tasks[SPOUT]
        return spout._durable, spout._coordinator

    def in_flight(self) -> tuple[int, Action] | None:
        return self.tasks[SPOUT]._coordinator.in_flight

    def settled(self, after: int) -> bool:
        """A checkpoint newer than ``after`` committed, recovery over, every task initialised."""
        record, coordinator = self.spout_state()
        return (record.phase is Phase.COMMITTED and record.txid > after and not coordinator.recovering
                and all(self.tasks[c].initialized for c in STATEFUL))


def run_case(phase: Action, worker: str, k: int, before: tuple, after: tuple) -> str | None:
    """One interleaving; returns what went wrong, or None."""
    memory.clear()
    with runtime_clock.simulation(0.0) as clock:
        faults = {"pre_prepare"} if phase is Action.ROLLBACK else set()  # a failed PREPARE rolls back
        model = Model(clock, faults)
        model.order = before
        for _ in range(400):  # run up to the first emission of ``phase``
            while model.queue:
                model.deliver_one()
            model.tasks[SPOUT].next_tuple()
            flight = model.in_flight()
            if flight is not None and flight[1] is phase and model.queue:
                break
            model.clock.advance(TICK)
            model._expire()
        else:
            return f"never reached {phase}"
        for _ in range(k):
            if model.queue:
                model.deliver_one()
        record_at_crash = model.spout_state()[0]
        for w in (("A", "B") if worker == "AB" else (worker,)):
            model.restart(w)
        model.order = after
        for _ in range(int(60 / TICK)):
            model.step()
            if model.settled(record_at_crash.txid):
                break
        else:
            record, coordinator = model.spout_state()
            inits = {c: model.tasks[c].initialized for c in STATEFUL}
            return (f"stalled 60 s after the restart: record {record}, in flight {coordinator.in_flight}, "
                    f"recovering {coordinator.recovering}, initialised {inits}, errors {model.errors[-3:]}")
        record = model.spout_state()[0]
        saved = memory.InMemoryStateProvider().new_state(f"{TOPOLOGY}/{SPOUT}", CONF, None).get(RECORD_KEY)
        if saved != [record.txid, record.phase.value]:
            return f"the spout's record {saved} is not its state {record}"
        committed = {c: model.tasks[c].state.committed_txid() for c in STATEFUL}
        if set(committed.values()) != {record.txid}:
            return f"the tasks committed {committed}, the spout's record says {record}"
    return None


ORDERS = [FORWARDERS, FORWARDERS[::-1]]


@pytest.mark.parametrize("worker", ["A", "B", "AB"], ids=["spout-worker", "bolt-worker", "both"])
@pytest.mark.parametrize("phase", [Action.INITSTATE, Action.PREPARE, Action.COMMIT, Action.ROLLBACK])
def test_a_restart_at_any_point_of_any_phase_recovers_to_a_new_commit(phase, worker):
    # 2 forwarders + 2 x 2 stateful copies: 6 deliveries per emission; k = 0..6 covers each
    failures = []
    for k, before, after in itertools.product(range(7), ORDERS, ORDERS):
        what = run_case(phase, worker, k, before, after)
        if what is not None:
            failures.append(f"k={k} before={before} after={after}: {what}")
    assert not failures, f"{len(failures)} of 28 interleavings failed:\n" + "\n".join(failures[:6])


def test_the_stall_seen_in_the_gray_upgrade_is_one_of_them():
    """Worker A restarted after S2 forwarded COMMIT: C2 holds S2's copy of the dead emission.

    Before the fix C2 paired it with S1's copy of each retry, so the retry's copy from S2
    waited for ever and every COMMIT timed out (log: "checkpoint COMMIT of transaction ...
    failed; recovering" every 5-7.5 s) and C1 never got INITSTATE.
    """
    assert run_case(Action.COMMIT, "A", 1, FORWARDERS[::-1], FORWARDERS) is None
