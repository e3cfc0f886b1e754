"""The acker's XOR ledger, as JStorm's: pure, no threads, no clock.

Each spout tuple tree has a random 64-bit root id. The ledger keeps, per root, the XOR
of every edge id announced and acked. A tuple's edge id enters twice (once when the
tuple is emitted, once when it is acked), so the value returns to 0 exactly when every
tuple of the tree has been acked. The spout task that emitted the root is learnt from
``init``; messages may arrive in any order, and duplicates are ignored.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from squall.runtime.rotating import RotatingMap


class _Entry:
    """One root in flight: its XOR value, its spout task once known, what was acked."""

    __slots__ = ("value", "spout_task", "failed", "seen", "detail")

    def __init__(self) -> None:
        self.value = 0
        self.spout_task: int | None = None
        self.failed = False
        # ack values that crossed a transport, so a redelivered one is ignored (A13)
        self.seen: set[int] | None = None
        # the first fail's [component, task, error], handed to the spout with the verdict
        self.detail: list | None = None


class Outcome(NamedTuple):
    """What the acker tells a spout task about one root (a named tuple: made once per root)."""

    kind: Literal["ack", "fail", "reset"]
    root: int
    spout_task: int
    detail: list | None = None  # a fail's [component, task, error], when a bolt said


class AckerLedger:
    """Roots in flight and their XOR values; expired roots are dropped on ``rotate``."""

    def __init__(self, buckets: int = 3) -> None:
        self._pending: RotatingMap = RotatingMap(buckets)
        self.duplicates = 0

    def __len__(self) -> int:
        return len(self._pending)

    def _entry(self, root: int) -> _Entry:
        entry = self._pending.get(root)
        if entry is None:
            entry = _Entry()
            self._pending.put_new(root, entry)
        return entry

    def init(self, root: int, value: int, spout_task: int) -> Outcome | None:
        """The spout emitted ``root`` with edges XOR-ing to ``value``."""
        entry = self._entry(root)
        if entry.spout_task is not None:
            self.duplicates += 1  # a retried init must not cancel the first one
            return None
        entry.spout_task = spout_task
        entry.value ^= value
        return self._settle(root, entry)

    def ack(self, root: int, value: int, once: bool = True) -> Outcome | None:
        """A tuple of the tree was acked: its edge XOR the edges anchored to it.

        ``once``: the value came through a transport that may redeliver it, so a repeat
        is ignored. An ack applied in place by a task of this worker cannot repeat (its
        tuple is marked done) and skips that bookkeeping.
        """
        entry = self._entry(root)
        if once:
            seen = entry.seen
            if seen is None:
                entry.seen = {value}
            elif value in seen:
                self.duplicates += 1
                return None
            else:
                seen.add(value)
        entry.value ^= value
        return self._settle(root, entry)

    def fail(self, root: int, detail: list | None = None) -> Outcome | None:
        """A tuple of the tree failed: the whole tree fails at once.

        ``detail`` is where and why (``[component, task, error]``); the first one is kept.
        """
        entry = self._entry(root)
        entry.failed = True
        if entry.detail is None and detail:
            entry.detail = detail
        return self._settle(root, entry)

    def reset_timeout(self, root: int) -> Outcome | None:
        """Restart the root's timeout here and, once its spout task is known, at the spout."""
        entry = self._pending.get(root)
        if entry is None:
            return None
        self._pending.touch(root)
        if entry.spout_task is None:
            return None
        return Outcome("reset", root, entry.spout_task)

    def _settle(self, root: int, entry: _Entry) -> Outcome | None:
        if entry.spout_task is None:
            return None  # the init has not arrived yet: nothing to tell anyone
        if entry.failed:
            self._pending.pop(root)
            return Outcome("fail", root, entry.spout_task, entry.detail)
        if entry.value == 0:
            self._pending.pop(root)
            return Outcome("ack", root, entry.spout_task)
        return None

    def rotate(self) -> int:
        """Drop the oldest bucket (its spouts time those roots out themselves)."""
        return len(self._pending.rotate())
