"""Exactly-once (``topology.guarantee: exactly_once``): aligned barriers, a pure state machine.

In exactly-once mode the checkpoint barrier enters the topology at the spouts (each spout
task records its position, then emits the barrier behind the records it emitted before it)
and every bolt task aligns it as Flink does: once the barrier of a checkpoint has arrived
from upstream task ``s``, the data tuples from ``s`` are held until it has arrived from
every upstream task; then the task acts on the checkpoint, forwards it and runs the held
tuples. A recovery barrier (ROLLBACK, or INITSTATE, which in this mode also returns a
surviving task to its last commit) drops instead the data of the upstream tasks it has not
yet arrived from: those records come from before the rollback, and the spouts read them
again.

``Alignment`` is that decision for one task, over no threads, sockets or clocks: the task
tells it which barrier arrived from where and asks it, per data tuple, whether to run it
now (``admit``); it keeps the held tuples and counts the dropped ones.

A task is *recovering* from its start (a task restarted fresh cannot know what its upstream
survivors emitted before their rollback reached it), after a data tuple failed in it, and
after it failed or abandoned a PREPARE: while recovering it runs no data and fails every
PREPARE, so no checkpoint commits until a recovery barrier has passed through it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

GUARANTEE_KEY = "topology.guarantee"
AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE = "exactly_once"
GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE)

PREPARE = "PREPARE"
COMMIT = "COMMIT"
RECOVERY = frozenset({"ROLLBACK", "INITSTATE"})
# the spout task's key for its recorded position, in its own state namespace
POSITION_KEY = "position"


def is_exactly_once(conf: Any) -> bool:
    """Whether ``conf`` asks for exactly-once."""
    return bool(conf) and conf.get(GUARANTEE_KEY) == EXACTLY_ONCE


class Alignment:
    """Which data tuples of one bolt task run now, wait for a barrier, or are dropped.

    ``arrive`` is told each checkpoint tuple that counts (not a late copy), ``complete``
    when the barrier has arrived from every upstream task and whether the task acted on it;
    ``admit`` decides each data tuple. Not thread-safe: the task's thread calls it.
    """

    def __init__(self, recovering: bool = True) -> None:
        self.key: Hashable | None = None  # (txid, action, emission) being aligned
        self.action: str | None = None
        self.arrived: set[int] = set()  # upstream tasks whose barrier has come
        self.held: list[Any] = []
        self.recovering = recovering
        self.dropped = 0  # data tuples dropped so far (they are read again after the rollback)

    def admit(self, source: int, item: Any) -> bool:
        """True: run ``item`` (from upstream task ``source``) now; else it is held or dropped."""
        if source in self.arrived:
            if self.recovering and self.action not in RECOVERY:
                self.dropped += 1  # behind a PREPARE this task will fail: rolled back anyway
            else:
                self.held.append(item)
            return False
        if self.recovering:
            self.dropped += 1
            return False
        return True

    def arrive(self, key: Hashable, action: str, source: int) -> None:
        """The barrier ``key`` (its action ``action``) arrived from upstream task ``source``."""
        if self.key is not None and key != self.key:
            # a new emission supersedes the one aligning here, which so never completes: what
            # was held behind it is from before the rollback that follows
            self.dropped += len(self.held)
            self.held = []
            self.arrived = set()
            if self.action != COMMIT:
                self.recovering = True
        self.key = key
        self.action = action
        if action in RECOVERY:
            self.recovering = True  # data of upstream tasks not yet rolled back is dropped
        if action != COMMIT:  # data after a COMMIT belongs to the next transaction: not held
            self.arrived.add(source)

    def fail_data(self) -> None:
        """A data tuple failed in this task: no checkpoint may commit before a rollback."""
        self.recovering = True

    def complete(self, ok: bool) -> list[Any]:
        """The barrier arrived from everywhere; ``ok``: the task acted on it (and forwards it).

        Returns the held tuples to run now, after the task forwarded the barrier.
        """
        action = self.action
        held, self.held = self.held, []
        self.key = None
        self.action = None
        self.arrived = set()
        if ok and action in RECOVERY:
            self.recovering = False
        elif not ok:
            self.recovering = True
        if self.recovering:
            self.dropped += len(held)
            return []
        return held
