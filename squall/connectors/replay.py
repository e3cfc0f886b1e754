"""The replay policy's pure core: what is in flight, what to replay when, what to give up.

No clock reads, no emits: callers pass ``now`` (seconds on ``squall.runtime.clock``) and act
on what the methods return, so unit tests drive it with plain numbers.
"""

from __future__ import annotations

import heapq
from itertools import count
from typing import Any, NamedTuple

from squall.runtime.failures import Failure


class Letter(NamedTuple):
    """A given-up message, as the ``__dead_letter`` stream carries it (in its field order)."""

    msg_id: Any
    values: list
    reason: str
    error: str | None
    component: str | None
    task: int | None
    attempts: int


def backoff(failures: int, base: float, cap: float) -> float:
    """Seconds to wait before replaying a message that failed ``failures`` times.

    ``base`` before the first replay, doubling with each further failure, never above ``cap``.
    """
    if failures <= 0 or base <= 0:
        return 0.0
    # 2**n overflows floats for huge n: stop doubling once past the cap
    delay = base
    for _ in range(failures - 1):
        delay *= 2.0
        if delay >= cap:
            return cap
    return min(delay, cap)


class ReplayPolicy:
    """Messages in flight, their failures, replays due, and when to give one up.

    ``max_retries`` None replays forever; N gives a message up on its (N+1)-th failure,
    as ``squall.spout.max.retries`` does for plain spouts.
    """

    def __init__(self, max_retries: int | None, backoff_secs: float, backoff_max_secs: float) -> None:
        self.max_retries = max_retries
        self.backoff_secs = backoff_secs
        self.backoff_max_secs = backoff_max_secs
        self.in_flight: dict[Any, list] = {}   # msg id -> values, from emit until done
        self.failures: dict[Any, int] = {}     # msg id -> failures so far
        self._due: list[tuple[float, int, Any]] = []  # (when, order, msg id) heap
        self._waiting: set[Any] = set()        # msg ids in the heap
        self._order = count()

    def __len__(self) -> int:
        return len(self.in_flight)

    def started(self, msg_id: Any, values: list) -> bool:
        """A new message is emitted; False if it is already in flight (do not emit it twice)."""
        if msg_id in self.in_flight:
            return False
        self.in_flight[msg_id] = values
        return True

    def done(self, msg_id: Any) -> bool:
        """Its tree was acked; True if it was in flight (commit it at the source)."""
        if self.in_flight.pop(msg_id, None) is None and msg_id not in self.failures:
            return False
        self.failures.pop(msg_id, None)
        self._waiting.discard(msg_id)
        return True

    def failed(self, msg_id: Any, failure: Failure, now: float) -> Letter | None:
        """Its tree failed: schedule a replay, or return the letter that gives it up."""
        values = self.in_flight.get(msg_id)
        if values is None or msg_id in self._waiting:
            return None  # unknown, or a second verdict for one emit: ignored (A15)
        n = self.failures.get(msg_id, 0) + 1
        if self.max_retries is not None and n > self.max_retries:
            del self.in_flight[msg_id]
            self.failures.pop(msg_id, None)
            return Letter(msg_id, values, failure.reason, failure.error, failure.component,
                          failure.task, n)
        self.failures[msg_id] = n
        when = now + backoff(n, self.backoff_secs, self.backoff_max_secs)
        heapq.heappush(self._due, (when, next(self._order), msg_id))
        self._waiting.add(msg_id)
        return None

    def next_replay(self, now: float) -> tuple[Any, list] | None:
        """A message whose backoff has passed, to emit again (oldest due first), or None."""
        due = self._due
        while due and due[0][0] <= now:
            _, _, msg_id = heapq.heappop(due)
            if msg_id in self._waiting:
                self._waiting.discard(msg_id)
                return msg_id, self.in_flight[msg_id]
        return None

    def clear(self) -> dict[Any, list]:
        """Forget every message (a seek): returns what was in flight, msg id -> values."""
        in_flight = self.in_flight
        self.in_flight, self.failures = {}, {}
        self._due, self._waiting = [], set()
        return in_flight

    def waiting(self) -> int:
        """How many failed messages wait for their backoff to pass."""
        return len(self._waiting)

    def next_due(self) -> float | None:
        """When the earliest waiting replay is due, or None."""
        while self._due and self._due[0][2] not in self._waiting:
            heapq.heappop(self._due)
        return self._due[0][0] if self._due else None
