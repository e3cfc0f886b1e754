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
        self._last = float("-inf")
        self._retry_at = float("-inf")

    def poll(self, now: float) -> Emit | None:
        """The next checkpoint tuple, or None (one in flight, or not yet time)."""
        if self.in_flight is not None or now < self._retry_at:
            return None
        save = None
        if not self.recovering and self.state.phase is Phase.COMMITTED:
            if now - self._last < self.interval:
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

    def back_off(self, now: float) -> None:
        """Emit nothing for one interval (a store that is down is not hammered)."""
        self._retry_at = now + self.interval


class Barrier:
    """Collects one checkpoint's tuples from every upstream task (alignment per task).

    A bolt acts on checkpoint (txid, action) once it has arrived from each of the
    ``expected`` upstream tasks. A second copy from the same task (a retried checkpoint)
    replaces the first, so retries never stand in for a task that has not delivered.
    Tuples on other streams are not held back meanwhile (as Storm): a bolt with several
    inputs may count tuples that arrived after the barrier on one input into the
    transaction, which at-least-once allows (they may be counted again on replay).
    """

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.key: tuple[int, str] | None = None
        self.arrived: dict[int, object] = {}

    def add(self, txid: int, action: str, source: int, item: object) -> tuple[list, list]:
        """Add ``item`` from task ``source``; returns (complete items, superseded items)."""
        superseded: list = []
        if self.key != (txid, action):
            superseded, self.arrived = list(self.arrived.values()), {}
            self.key = (txid, action)
        previous = self.arrived.get(source)
        if previous is not None:
            superseded.append(previous)
        self.arrived[source] = item
        if len(self.arrived) >= self.expected:
            done, self.arrived, self.key = list(self.arrived.values()), {}, None
            return done, superseded
        return [], superseded
