"""A live rescale of a keyed stateful component, riding one checkpoint ``T``.

The cluster holds the checkpoint spout until no checkpoint is in flight (the record says
COMMITTED ``T - 1``), installs what follows on the tasks concerned, and lets the spout go on;
everything else happens in the tasks, driven by the checkpoint tuples they see, so every
task takes each step at the same point of the barrier sequence:

- ``MoveSchedule`` (pure): which of the component's tasks a checkpoint tuple ``(txid,
  action)`` goes to. ``PREPARE(T)`` and everything before it: the old tasks; ``COMMIT(T)``:
  old and new (the old commit what they prepared, the new commit nothing); from then on the
  new tasks. ``ROLLBACK(T)`` means ``T`` rolled back (it is emitted only once ``PREPARE(T)``
  was, whether or not this task forwarded it): the old tasks for good (the move failed, the
  old routing stays).
- ``SwitchRouter``: the ``$checkpoint`` router of a task feeding the component: it sends each
  barrier to the schedule's tasks and switches the task's fields routers to the new table
  right after ``PREPARE(T)`` (so what the task sends after the barrier goes by the new
  table), and back if ``T`` rolls back.
- ``MovingBarrier``: the barrier of a task downstream of the component, expecting as many
  copies as the schedule sends the component's tasks.
- ``KeyedMove``: on each task of the component, a gate around ``execute`` and a hook around
  ``checkpoint``. An old owner commits ``T`` and then releases the key groups it gives up
  (``release_key_groups``); input for them reaching it after its ``PREPARE(T)`` (from an
  at-least-once spout, whose data carries no barrier) is failed and replayed by the new
  table. A new owner holds input for the key groups it takes until it sees a barrier after
  ``COMMIT(T)`` (the checkpoint spout starts one only once ``COMMIT(T)`` completed
  everywhere, so the old owners have committed and released), then adds them
  (``add_key_groups``: their committed state) and runs what it held: ``pause_ms``.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from squall.runtime.checkpoint import Barrier
from squall.runtime.hashing import hash_values, stable_hash
from squall.runtime.routing import RouterBase

RECOVERY = ("ROLLBACK", "INITSTATE")


class MoveSchedule:
    """Which tasks of the rescaled component get checkpoint tuple ``(txid, action)`` (pure).

    One copy per task that routes or counts barriers: each sees the same barrier sequence,
    so each decides alike when ``T`` rolled back.
    """

    def __init__(self, txid: int, old: list[int], new: list[int]) -> None:
        self.txid = txid
        self.old = sorted(old)
        self.new = sorted(new)
        self.both = sorted(set(old) | set(new))
        self.switched = False  # PREPARE(T) seen
        self.rolled_back = False

    def copy(self) -> MoveSchedule:
        """A fresh copy for another task."""
        return MoveSchedule(self.txid, self.old, self.new)

    def see(self, txid: int, action: str) -> str:
        """Note barrier ``(txid, action)``; what it is to the move.

        ``switch`` (PREPARE(T)), ``rolled_back`` (T rolled back, just now), ``commit``
        (COMMIT(T)), ``committed`` (a barrier after COMMIT(T)), ``before`` or ``after``.
        """
        t = self.txid
        if self.rolled_back:
            return "before"
        # ROLLBACK(T) exists only once PREPARE(T) was emitted (the record said PREPARING(T)):
        # the move failed, for every task, whether or not this one had forwarded PREPARE(T)
        if (txid == t and action == "ROLLBACK") or (self.switched and action in RECOVERY and txid < t):
            self.rolled_back = True
            return "rolled_back"
        if txid < t:
            return "before"
        if txid == t and action == "PREPARE":
            self.switched = True
            return "switch"
        if txid == t and action == "COMMIT":
            return "commit"
        return "committed"

    def targets(self, txid: int, action: str) -> list[int]:
        """The component's tasks that get ``(txid, action)`` (call after ``see``)."""
        if self.rolled_back or txid < self.txid or (txid == self.txid and action in ("PREPARE", "ROLLBACK")):
            return self.old
        if txid == self.txid and action == "COMMIT":
            return self.both
        return self.new


class SwitchRouter(RouterBase):
    """The ``$checkpoint`` router of a task feeding the rescaled component (see the module)."""

    def __init__(self, schedule: MoveSchedule, switch: Callable[[bool], None] | None) -> None:
        self.schedule = schedule
        self.switch = switch  # switch(True): the new table; switch(False): back to the old

    def route(self, values: list) -> list[int]:
        """The targets of barrier ``values`` (``[txid, action]``); switches tables at T."""
        txid, action = values
        what = self.schedule.see(txid, action)
        if self.switch is not None and what in ("switch", "rolled_back"):
            self.switch(what == "switch")
        return self.schedule.targets(txid, action)


class MovingBarrier(Barrier):
    """A downstream task's barrier: ``others`` senders plus the schedule's tasks of the component."""

    def __init__(self, old: Barrier, schedule: MoveSchedule, others: int) -> None:
        super().__init__(old.expected, old.emission)
        self.key, self.arrived, self.last_txid = old.key, old.arrived, old.last_txid
        self._over = old._over
        self.schedule = schedule
        self.others = others

    def add(self, txid: int, action: str, source: int, item: object) -> tuple[list, list]:
        """As ``Barrier.add``, expecting the copies the component's tasks send for this one."""
        if self.key is None or self.key[:2] != (txid, action):
            self.schedule.see(txid, action)
        self.expected = self.others + len(self.schedule.targets(txid, action))
        return super().add(txid, action, source, item)


def key_of(indexes: list[int]) -> Callable[[list], int]:
    """The fields grouping's hash of a tuple's values, as ``FieldsRouter`` computes it."""
    if len(indexes) == 1:
        i = indexes[0]
        return lambda values: stable_hash(values[i])
    return lambda values: hash_values([values[i] for i in indexes])


class KeyedMove:
    """The move as one task of the rescaled component takes part in it (see the module).

    ``giving``: key groups this task releases after committing T; ``taking``: key groups it
    adds once T committed; ``keys``: (source component, stream) -> hash of a tuple's key;
    ``exactly_once``: held input is dropped, not failed, if T rolls back (it is read again).
    """

    def __init__(self, task: Any, schedule: MoveSchedule, giving: set[int], taking: set[int],
                 keys: dict[tuple[str, str], Callable[[list], int]], num_key_groups: int,
                 exactly_once: bool) -> None:
        self.task = task
        self.schedule = schedule
        self.giving = giving
        self.taking = taking
        self.keys = keys
        self.k = num_key_groups
        self.exactly_once = exactly_once
        self.closed: set[int] = set()  # given up: input for them is failed (replayed elsewhere)
        self.holding: set[int] = set(taking)
        self.held: list[Any] = []
        self.held_since: float | None = None
        self.pause_ms = 0.0
        self.moved_bytes = 0
        self.released = not giving
        self.added = not taking
        self.failed: str | None = None
        self.execute = task._bound_execute
        self.checkpoint = task.checkpoint  # the task's own (bound) method

    @property
    def done(self) -> bool:
        """The task's part is over (groups released and added), or T rolled back."""
        return (self.released and self.added) or self.schedule.rolled_back

    def install(self) -> None:
        """Gate ``execute`` and hook ``checkpoint`` (on the task's thread)."""
        self.task._bound_execute = self.gate
        self.task.checkpoint = self.on_checkpoint

    def uninstall(self) -> None:
        """Give the task back its own ``execute`` and ``checkpoint``."""
        self.task._bound_execute = self.execute
        self.task.__dict__.pop("checkpoint", None)

    def gate(self, tup: Any) -> None:
        """Execute ``tup`` unless its key group is being taken (hold) or was given (fail)."""
        key = self.keys.get((tup.component, tup.stream))
        if key is not None and not tup.is_tick():
            group = key(tup.values) % self.k
            if group in self.holding:
                if self.held_since is None:
                    self.held_since = self.task.host.clock()
                self.held.append(tup)
                return
            if group in self.closed:
                self.task.collector.fail(tup)
                return
        self.execute(tup)

    def on_checkpoint(self, txid: int, action: Any) -> bool:
        """The task's checkpoint, with the move's steps before or after it."""
        what = self.schedule.see(txid, str(action))
        if what == "rolled_back":
            self.abandon()
        elif what == "committed" and not self.added:
            self._take()
        ok = bool(self.checkpoint(txid, action))
        if ok and what == "switch":
            self.closed = set(self.giving)
        elif ok and what == "commit" and not self.released:
            self.task.state.release_key_groups(sorted(self.giving))
            self.released = True
        return ok

    def _take(self) -> None:
        state = self.task.state
        groups = sorted(self.taking)
        for s in state.open_states(groups):
            for pair in _committed(s):
                self.moved_bytes += len(pickle.dumps(pair, protocol=5))
        state.add_key_groups(groups)
        self.added = True
        self.holding = set()
        held, self.held = self.held, []
        if self.held_since is not None:
            self.pause_ms = round((self.task.host.clock() - self.held_since) * 1000.0, 3)
        for tup in held:
            self.execute(tup)

    def abandon(self) -> None:
        """T rolled back: nothing moved; held input is replayed (at-least-once) or read again."""
        self.holding = set()
        self.closed = set()
        held, self.held = self.held, []
        if not self.exactly_once:
            for tup in held:
                self.task.collector.fail(tup)
        self.failed = f"checkpoint {self.schedule.txid} rolled back"


def _committed(state: Any) -> Any:
    items = getattr(state, "committed_items", None)
    return items() if items is not None else iter(state)
