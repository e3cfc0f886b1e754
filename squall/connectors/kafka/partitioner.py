"""Storm's ``RoundRobinManualPartitioner`` and the spout's ``Timer``, both pure.

Every task of a spout lists the same partitions, sorts them by (topic, partition) and takes
those at its task index, its index plus the task count, and so on: no coordination is needed
for the tasks to agree, and partitions appended to one topic keep their task.
"""

from __future__ import annotations

from collections.abc import Iterable

from squall.connectors.kafka.offsets import TopicPartition
from squall.runtime import clock


def partitions_for_task(partitions: Iterable[TopicPartition], task_index: int,
                        task_count: int) -> set[TopicPartition]:
    """The partitions task ``task_index`` of ``task_count`` reads."""
    if task_count < 1 or not 0 <= task_index < task_count:
        raise ValueError(f"task index {task_index} is not among {task_count} tasks")
    ordered = sorted(TopicPartition(t, p) for t, p in partitions)
    return set(ordered[task_index::task_count])


class Timer:
    """Storm's ``Timer``: expires ``delay_ms`` after creation, then every ``period_ms``.

    Reads ``squall.runtime.clock`` so simulated time drives it.
    """

    def __init__(self, delay_ms: float, period_ms: float) -> None:
        self.period_s = period_ms / 1000.0
        self._start = clock.monotonic()
        self._next = self._start + delay_ms / 1000.0

    def is_expired_reset_on_true(self) -> bool:
        """True once the current period is over, and then the next period starts."""
        now = clock.monotonic()
        if now < self._next:
            return False
        self._next = now + self.period_s
        return True

    @property
    def next_due(self) -> float:
        """When the current period ends (runtime clock seconds)."""
        return self._next

    def expire_now(self) -> None:
        """Make the next check true (a refresh asked for out of turn)."""
        self._next = clock.monotonic()
