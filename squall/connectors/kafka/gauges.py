"""The spout's lag and health gauges (Storm's ``kafkaOffset`` metric)."""

from __future__ import annotations

from typing import Any

from squall.connectors.kafka.book import Book
from squall.connectors.kafka.health import Health
from squall.connectors.kafka.offsets import TopicPartition


class Gauges:
    """Figures of one spout task, read by the metrics thread from the task's own state."""

    def __init__(self, context: Any, book: Book, health: Health) -> None:
        self.context, self.book, self.health = context, book, health
        self.metrics_on = callable(getattr(context, "register_gauge", None))
        self.registered: set[TopicPartition] = set()

    def register(self) -> None:
        """Register the task's gauges: total lag and whether the broker is reachable."""
        if self.metrics_on:
            self.context.register_gauge("kafkaOffset/totalSpoutLag", self.total_lag)
            self.context.register_gauge("kafkaOffset/brokerReachable", lambda: 0 if self.health.down else 1)

    def offsets(self, tp: TopicPartition) -> dict[str, int | None]:
        """earliest, latest, latest_emitted, latest_committed and lag of one partition."""
        lo, hi = self.book.watermarks.get(tp, (None, None))
        manager = self.book.managers.get(tp)
        if manager is not None:
            committed: int | None = manager.committed_offset
            emitted = manager.latest_emitted_offset
        else:
            committed = self.book.fetched.get(tp)
            emitted = None if committed is None else committed - 1
        lag = None if hi is None or committed is None else max(0, hi - committed)
        return {"earliest": lo, "latest": hi, "latest_emitted": emitted, "latest_committed": committed,
                "lag": lag}

    def total_lag(self) -> int:
        """The lag summed over this task's partitions (Storm's ``totalSpoutLag``)."""
        return sum(self.offsets(tp)["lag"] or 0 for tp in list(self.book.assigned))

    def ensure(self) -> None:
        """A gauge per partition and figure, registered the first time this task reads it."""
        if not self.metrics_on:
            return
        for tp in list(self.book.assigned):
            if tp in self.registered:
                continue
            self.registered.add(tp)
            for field in ("earliest", "latest", "latest_emitted", "latest_committed", "lag"):
                self.context.register_gauge(
                    f"kafkaOffset/{tp.topic}/partition_{tp.partition}/{field}",
                    lambda tp=tp, field=field: self.offsets(tp)[field] if tp in self.book.assigned else None)
