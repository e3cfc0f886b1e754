"""storm-kafka-client's ``KafkaSpoutRetryExponentialBackoff``: when a failed record is retried.

The first retry waits ``initial_delay_ms``; the n-th (n >= 2) waits ``delay_period_ms * 2**(n-1)``,
never more than ``max_delay_ms``. A record that failed more than ``max_retries`` times is not
scheduled (``schedule`` returns False): the spout gives it up. Times are read from
``squall.runtime.clock`` (milliseconds), so ``simulated_time()`` drives the schedule.
"""

from __future__ import annotations

import heapq
from itertools import count
from typing import Any

from squall.connectors.kafka.offsets import TopicPartition
from squall.runtime import clock

MsgId = tuple[str, int, int]  # (topic, partition, offset), the spout's msg id


def _now_ms() -> float:
    return clock.monotonic() * 1000.0


class RetryExponentialBackoff:
    """Exponential backoff with a retry limit (``max_retries`` None: retry forever).

    Configuration and, once a spout task copies it (``fresh``), that task's retry schedule.
    """

    def __init__(self, initial_delay_ms: float = 0, delay_period_ms: float = 2,
                 max_retries: int | None = None, max_delay_ms: float = 10_000) -> None:
        for name, value in (("initial_delay_ms", initial_delay_ms), ("delay_period_ms", delay_period_ms),
                            ("max_delay_ms", max_delay_ms)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"RetryExponentialBackoff: {name} must be a non-negative number "
                                 f"of milliseconds, got {value!r}")
        if max_retries is not None and (isinstance(max_retries, bool) or not isinstance(max_retries, int)
                                        or max_retries < 0):
            raise ValueError(f"RetryExponentialBackoff: max_retries must be a non-negative integer "
                             f"or None, got {max_retries!r}")
        self.initial_delay_ms = initial_delay_ms
        self.delay_period_ms = delay_period_ms
        self.max_retries = max_retries
        self.max_delay_ms = max_delay_ms
        self._reset()

    def _reset(self) -> None:
        self._when: dict[MsgId, float] = {}          # msg id -> when it may be retried (ms)
        self._heap: list[tuple[float, int, MsgId]] = []
        self._order = count()

    def fresh(self) -> RetryExponentialBackoff:
        """A copy with the same settings and an empty schedule (one per spout task)."""
        return RetryExponentialBackoff(self.initial_delay_ms, self.delay_period_ms,
                                       self.max_retries, self.max_delay_ms)

    def __getstate__(self) -> dict[str, Any]:
        return {"initial_delay_ms": self.initial_delay_ms, "delay_period_ms": self.delay_period_ms,
                "max_retries": self.max_retries, "max_delay_ms": self.max_delay_ms}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def delay_ms(self, num_fails: int) -> float:
        """How long a record that failed ``num_fails`` times (>= 1) waits before its retry."""
        if num_fails < 1:
            raise ValueError("delay_ms assumes the record has failed at least once")
        if num_fails == 1:
            delay = self.initial_delay_ms
        else:
            # 2**n grows past any cap quickly: stop once past max_delay_ms
            delay = self.delay_period_ms * 2.0 ** min(num_fails - 1, 1000)
        return min(delay, self.max_delay_ms)

    def schedule(self, msg_id: MsgId, num_fails: int) -> bool:
        """Schedule a retry of a record that failed ``num_fails`` times; False past the limit."""
        if self.max_retries is not None and num_fails > self.max_retries:
            self.remove(msg_id)
            return False
        when = _now_ms() + self.delay_ms(num_fails)
        self._when[msg_id] = when
        heapq.heappush(self._heap, (when, next(self._order), msg_id))
        return True

    def is_scheduled(self, msg_id: MsgId) -> bool:
        """Whether ``msg_id`` waits for a retry."""
        return msg_id in self._when

    def is_ready(self, msg_id: MsgId) -> bool:
        """Whether ``msg_id`` is scheduled and its backoff has passed."""
        when = self._when.get(msg_id)
        return when is not None and when <= _now_ms()

    def remove(self, msg_id: MsgId) -> bool:
        """Unschedule ``msg_id``; True if it was scheduled."""
        return self._when.pop(msg_id, None) is not None

    def retain_all(self, partitions: set[TopicPartition]) -> bool:
        """Unschedule the records of every partition not in ``partitions``; True if any went."""
        gone = [m for m in self._when if TopicPartition(m[0], m[1]) not in partitions]
        for m in gone:
            del self._when[m]
        return bool(gone)

    def _live(self) -> list[tuple[float, MsgId]]:
        now = _now_ms()
        return sorted((w, m) for m, w in self._when.items() if w <= now)

    def earliest_retriable_offsets(self) -> dict[TopicPartition, int]:
        """Per partition, the lowest offset whose retry is due."""
        out: dict[TopicPartition, int] = {}
        for _, (topic, partition, offset) in self._live():
            tp = TopicPartition(topic, partition)
            out[tp] = min(offset, out.get(tp, offset))
        return out

    def ready_message_count(self) -> int:
        """How many scheduled records are due."""
        now = _now_ms()
        return sum(1 for w in self._when.values() if w <= now)

    def pop_ready(self) -> MsgId | None:
        """The scheduled record that has been due longest, unscheduled; None if none is due."""
        heap, now = self._heap, _now_ms()
        while heap and heap[0][0] <= now:
            when, _, msg_id = heapq.heappop(heap)
            if self._when.get(msg_id) == when:  # else rescheduled or removed since
                del self._when[msg_id]
                return msg_id
        return None

    def next_due_ms(self) -> float | None:
        """When the earliest scheduled retry is due (clock milliseconds), or None."""
        while self._heap and self._when.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._when)

    def __repr__(self) -> str:
        return (f"RetryExponentialBackoff(initial_delay_ms={self.initial_delay_ms}, "
                f"delay_period_ms={self.delay_period_ms}, max_retries={self.max_retries}, "
                f"max_delay_ms={self.max_delay_ms})")
