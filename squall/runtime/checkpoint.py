"""The checkpoint protocol of stateful bolts, as Storm's: pure state machines.

The checkpoint spout drives transactions ``txid`` through three phases on the
``$checkpoint`` stream: PREPARE (each stateful bolt stages its state), COMMIT (each makes
it durable), and, after a failure, ROLLBACK (each returns to its last commit). INITSTATE
hands each bolt its state at start. A phase completes when its checkpoint tuple tree is
acked, i.e. when every bolt downstream has done its part.

Recovery (RELIABILITY D1), from the spout's last saved record:
PREPARING -> ROLLBACK, then COMMITTED(txid - 1); COMMITTING -> COMMIT; COMMITTED ->
INITSTATE. Then PREPARE(txid + 1) and onwards.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import StrEnum

CHECKPOINT_STREAM = "$checkpoint"
CHECKPOINT_SPOUT = "$checkpointspout"


class Phase(StrEnum):
    """Where the last transaction stands (saved durably by the checkpoint spout)."""

    COMMITTED = "COMMITTED"
    PREPARING = "PREPARING"
    COMMITTING = "COMMITTING"


class Action(StrEnum):
    """What a checkpoint tuple asks the bolts to do."""

    PREPARE = "PREPARE"
    COMMIT = "COMMIT"
    ROLLBACK = "ROLLBACK"
    INITSTATE = "INITSTATE"


@dataclass(frozen=True)
class TxState:
    """The checkpoint spout's record: a transaction id and its phase."""

    txid: int = 0
    phase: Phase = Phase.COMMITTED

    def next_action(self, recovering: bool) -> Action:
        """The action to emit for this record."""
        if self.phase is Phase.PREPARING:
            return Action.ROLLBACK if recovering else Action.PREPARE
        if self.phase is Phase.COMMITTING:
            return Action.COMMIT
        return Action.INITSTATE if recovering else Action.PREPARE

    def next_state(self, recovering: bool) -> TxState:
        """The record once the action for this one has been acked."""
        if self.phase is Phase.PREPARING:
            if recovering:
                return TxState(self.txid - 1, Phase.COMMITTED)
            return TxState(self.txid, Phase.COMMITTING)
        if self.phase is Phase.COMMITTING:
            return TxState(self.txid, Phase.COMMITTED)
        if recovering:
            return self  # INITSTATE leaves the record as it is
        return TxState(self.txid + 1, Phase.PREPARING)


@dataclass(frozen=True)
class Emit:
    """A checkpoint tuple to emit, and the record to save durably before emitting it."""

    txid: int
    action: Action
    save: TxState | None = None


class CheckpointCoordinator:
    """The checkpoint spout's logic, over an injectable clock (times in seconds).

    ``poll(now)`` says what to emit, if anything; ``acked``/``failed`` report the outcome
    of the one checkpoint tuple in flight and return the record to save, if it changed.
    The PREPARING record is saved before PREPARE is emitted, so that a crash during
    prepare is rolled back on recovery.
    """

    def __init__(self, saved: TxState, interval: float) -> None:
        self.state = saved
        self.interval = interval
        self.recovering = True  # every start begins with recovery: rollback/commit/init
        self.in_flight: tuple[int, Action] | None = None
        self.held = False  # a live rescale waits for a free barrier (``hold``)
        self._last = float("-inf")
        self._retry_at = float("-inf")

    def poll(self, now: float) -> Emit | None:
        """The next checkpoint tuple, or None (one in flight, held, or not yet time)."""
        if self.in_flight is not None or now < self._retry_at:
            return None
        save = None
        if not self.recovering and self.state.phase is Phase.COMMITTED:
            if self.held or now - self._last < self.interval:
                return None
            self._last = now
            self.state = save = self.state.next_state(False)
        action = self.state.next_action(self.recovering)
        self.in_flight = (self.state.txid, action)
        return Emit(self.state.txid, action, save)

    def acked(self, txid: int, action: Action) -> TxState | None:
        """The checkpoint in flight completed; returns the record to save, if it changed."""
        if self.in_flight != (txid, action):
            return None  # a late answer about an earlier checkpoint
        self.in_flight = None
        if self.recovering and self.state.phase is Phase.COMMITTED:
            self.recovering = False  # INITSTATE done: recovery is over
            return None
        self.state = self.state.next_state(self.recovering)
        return self.state

    def failed(self, txid: int, action: Action, now: float) -> None:
        """The checkpoint in flight failed or timed out: recover, one interval from now."""
        if self.in_flight != (txid, action):
            return
        self.in_flight = None
        self.recovering = True
        self.back_off(now)

    def hold(self) -> None:
        """Begin no new transaction until ``release``.

        What is under way still ends: a prepared transaction's COMMIT, a recovery's
        ROLLBACK and INITSTATE. A hold that stopped them too would wait forever for the
        idleness (``idle``) a live rescale holds the spout for.
        """
        self.held = True

    def release(self) -> None:
        """Begin transactions again, at the interval as before."""
        self.held = False

    def idle(self) -> bool:
        """Nothing in flight or recovering, and the last transaction committed: a barrier is free."""
        return self.in_flight is None and not self.recovering and self.state.phase is Phase.COMMITTED

    def start_over(self, saved: TxState, now: float) -> None:
        """Recover from ``saved`` (the durable record), one interval from now; a hold stays.

        For an advance that could not be saved: what was in flight and the record past
        ``saved`` are forgotten, as by a new coordinator, but a live rescale that held the
        spout still waits for this recovery to end.
        """
        self.state = saved
        self.recovering = True
        self.in_flight = None
        self._last = float("-inf")
        self.back_off(now)

    def back_off(self, now: float) -> None:
        """Emit nothing for one interval (a store that is down is not hammered)."""
        self._retry_at = now + self.interval


def emission_of(item: object) -> tuple[int, ...]:
    """Which emission of the checkpoint spout ``item`` belongs to: its tuple tree's roots.

    Every copy of one checkpoint tuple, however many bolts forwarded it, descends from one
    spout tuple; a retry of the same (txid, action) is a new spout tuple with a new root.
    Untracked items (acking off) all share the empty key, which is never taken as over.
    """
    ident = getattr(item, "id", None)
    roots = ident.roots() if ident is not None and hasattr(ident, "roots") else ()
    return tuple(sorted(roots))


class Barrier:
    """Collects one checkpoint's tuples from every upstream task (alignment per task).

    A bolt acts on checkpoint (txid, action) once it has arrived from each of the
    ``expected`` upstream tasks, all copies of one emission of the checkpoint spout (one
    tuple tree). Copies of different emissions never complete a barrier together: the
    spout retries a (txid, action) after a failure or timeout, and a copy of an earlier
    attempt left here (its other copies lost with a restarted worker) would otherwise pair
    with a copy of the retry and leave the retry's last copy waiting for ever, so that
    every retry timed out (the stall after a worker restart mid-COMMIT). A copy of a new
    emission supersedes what has arrived; a copy of an emission already superseded or
    completed here, or of a transaction older than the last one acted on (Storm's
    ``lastTxid``), is superseded at once. Superseded items are failed by the caller: their
    trees are over at the spout, which has one checkpoint in flight at a time.

    Tuples on other streams are not held back meanwhile (as Storm): a bolt with several
    inputs may count tuples that arrived after the barrier on one input into the
    transaction, which at-least-once allows (they may be counted again on replay). In
    exactly-once mode ``exactly_once.Alignment`` holds them, beside this barrier.
    """

    FORGET_AFTER = 64  # emissions remembered as over, per barrier

    def __init__(self, expected: int, emission: Callable[[object], Hashable] = emission_of) -> None:
        self.expected = expected
        self.emission = emission
        self.key: tuple[int, str, Hashable] | None = None
        self.arrived: dict[int, object] = {}
        self.last_txid: int | None = None  # of the last checkpoint completed here
        self._over: deque[Hashable] = deque(maxlen=self.FORGET_AFTER)

    def add(self, txid: int, action: str, source: int, item: object) -> tuple[list, list]:
        """Add ``item`` from task ``source``; returns (complete items, superseded items)."""
        emission = self.emission(item)
        if (emission and emission in self._over) or (self.last_txid is not None and txid < self.last_txid):
            return [], [item]  # a late copy of a checkpoint that is over here
        superseded: list = []
        key = (txid, action, emission)
        if self.key != key:
            if self.key is not None and self.key[2]:
                self._over.append(self.key[2])
            superseded, self.arrived = list(self.arrived.values()), {}
            self.key = key
        previous = self.arrived.get(source)
        if previous is not None:
            superseded.append(previous)  # a duplicate from one task stands in for no other
        self.arrived[source] = item
        if len(self.arrived) >= self.expected:
            done, self.arrived, self.key = list(self.arrived.values()), {}, None
            if emission:
                self._over.append(emission)
            # Storm's lastTxid: a rollback of t takes the bolt back to t - 1
            self.last_txid = txid - 1 if action == Action.ROLLBACK else txid
            return done, superseded
        return [], superseded
