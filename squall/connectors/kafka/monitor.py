"""The spout's calls that wait on the broker, on a thread of their own.

Listing partitions, reading committed offsets and reading watermarks each wait for a broker
round trip (seconds, when the broker does not answer): the spout's task must not wait with
them, or every task of its worker would. The spout asks (``request``), this thread calls
the broker with its own consumer (a librdkafka handle is not shared across threads here),
and the answers wait in ``results`` until the spout's next ``next_tuple`` takes them.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from typing import Any

from squall.connectors.kafka.offsets import TopicPartition

log = logging.getLogger("squall.connectors.kafka")

CALL_TIMEOUT_S = 2.0  # a broker that has not answered in this long counts as unreachable


class Monitor:
    """A thread answering ``partitions``, ``committed``, ``owner_marks`` and ``watermarks`` requests.

    Each answer is ``(kind, payload, error)``: ``error`` is the text of the broker error
    (the call failed) or None.
    """

    def __init__(self, consumer: Any, owners: Any, subscribes: Any) -> None:
        self._consumer = consumer
        self._owners = owners
        self._subscribes = subscribes
        self._requests: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self.results: deque[tuple[str, Any, str | None]] = deque()
        self.outstanding: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="kafka-spout-monitor", daemon=True)
        self._thread.start()

    def request(self, kind: str, payload: Any = None) -> None:
        """Ask for ``kind`` unless that kind of request is already on its way."""
        if kind not in self.outstanding:
            self.outstanding.add(kind)
            self._requests.put((kind, payload))

    def take(self) -> tuple[str, Any, str | None] | None:
        """The next answer, or None."""
        if not self.results:
            return None
        answer = self.results.popleft()
        self.outstanding.discard(answer[0])
        return answer

    def close(self) -> None:
        """Stop the thread (after the call in progress) and close its consumer."""
        self._requests.put(None)
        self._thread.join(timeout=CALL_TIMEOUT_S * 3)
        for consumer in (self._consumer, self._owners):
            try:
                consumer.close()
            except Exception as e:  # noqa: BLE001 - closing a consumer of a dead broker
                log.debug("closing the monitor's consumer: %s", e)

    def _run(self) -> None:
        while True:
            item = self._requests.get()
            if item is None:
                return
            kind, payload = item
            try:
                answer = getattr(self, "_" + kind)(payload)
                self.results.append((kind, answer, None))
            except Exception as e:  # noqa: BLE001 - any broker error is an answer to report
                self.results.append((kind, payload, f"{type(e).__name__}: {e}"))

    def _partitions(self, _: Any) -> list[TopicPartition]:
        return list_partitions(self._consumer, self._subscribes)

    def _committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, tuple[int, int, int, int]]:
        """Per partition: committed offset, owner's code (side group), watermarks.

        Read in that order: an owner marks a partition released only once its commit landed,
        and a commit names only offsets the broker held, so the end read last is never below
        the committed offset read before it.
        """
        owners = read_committed(self._owners, tps)
        offsets = read_committed(self._consumer, tps)
        marks = self._watermarks(tps)
        return {tp: (offset, owners[tp][0], *marks[tp]) for tp, (offset, _) in offsets.items()}

    def _owner_marks(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Per partition: the owner's code in the side group (negative: none)."""
        return {tp: code for tp, (code, _) in read_committed(self._owners, tps).items()}

    def _watermarks(self, tps: list[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        from confluent_kafka import TopicPartition as KTP

        return {tp: tuple(self._consumer.get_watermark_offsets(KTP(tp.topic, tp.partition),
                                                               timeout=CALL_TIMEOUT_S, cached=False))
                for tp in tps}


def list_partitions(consumer: Any, subscribes: Any, timeout: float = CALL_TIMEOUT_S) -> list[TopicPartition]:
    """Every partition of the subscribed topics, sorted (one metadata request)."""
    md = consumer.list_topics(timeout=timeout)
    out: list[TopicPartition] = []
    for name, topic in md.topics.items():
        if topic.error is None and subscribes(name):
            out.extend(TopicPartition(name, p) for p in topic.partitions)
    return sorted(out)


def read_committed(consumer: Any, tps: list[TopicPartition],
                   timeout: float = CALL_TIMEOUT_S) -> dict[TopicPartition, tuple[int, str | None]]:
    """The group's committed offset and metadata per partition (offset < 0: none committed)."""
    from confluent_kafka import TopicPartition as KTP

    if not tps:
        return {}
    got = consumer.committed([KTP(tp.topic, tp.partition) for tp in tps], timeout=timeout)
    return {TopicPartition(k.topic, k.partition): (k.offset, getattr(k, "metadata", None)) for k in got}
