"""The spout's consumer: fetching records on the task's thread, pausing full partitions."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from squall.connectors.kafka.book import Book
from squall.connectors.kafka.client import import_client, ktp
from squall.connectors.kafka.commits import Commits
from squall.connectors.kafka.config import KafkaSpoutConfig, ProcessingGuarantee
from squall.connectors.kafka.health import Health
from squall.connectors.kafka.offsets import TopicPartition

POLL_BATCH = 500         # records taken from the client per poll


class Fetcher:
    """Records fetched and not yet emitted, in order per partition.

    Under AT_LEAST_ONCE a partition with ``max_uncommitted_offsets`` emitted but uncommitted
    is paused, and what was fetched of it before the pause is held, never dropped.
    """

    def __init__(self, consumer: Any, config: KafkaSpoutConfig, book: Book, health: Health,
                 commits: Commits, poll_timeout_s: float) -> None:
        self.consumer, self.config, self.book = consumer, config, book
        self.health, self.commits = health, commits
        self.at_least_once = config.is_at_least_once()
        self.poll_timeout_s = poll_timeout_s
        self.buffer: deque[Any] = deque()
        self.held: dict[Any, deque[Any]] = {}  # records of partitions at the limit
        self.paused: set[TopicPartition] = set()
        # exactly-once: whether a record of the partition is read but not out of the spout
        # (its translator or emit raised; a retry or dead letter waits). Its later records
        # are held until it is out: sent before it, they would commit in a checkpoint whose
        # position stays at it, and come again after the rollback that follows
        self.stuck: Callable[[Any], bool] | None = None
        # per assigned partition, how many more records may be emitted before it is full,
        # as of ``begin`` (each record ``next_record`` returns is emitted and counts once)
        self.room: dict[Any, int] = {}

    def full(self, tp: tuple) -> bool:
        """Whether ``tp`` has ``max_uncommitted_offsets`` emitted but uncommitted, or is stuck."""
        return self.at_least_once and (
            len(self.book.managers[tp]._emitted) >= self.config.max_uncommitted_offsets
            or (self.stuck is not None and self.stuck(tp)))

    def begin(self) -> None:
        """Before a run of ``next_record`` calls (one ``next_tuple``): each partition's room."""
        if self.at_least_once:
            limit, managers = self.config.max_uncommitted_offsets, self.book.managers
            self.room = {tp: limit - len(managers[tp]._emitted) for tp in self.book.assigned}
        else:
            self.room = dict.fromkeys(self.book.assigned, 1 << 62)

    def next_record(self) -> Any:
        """The next record to emit: held ones of partitions with room again first, in order.

        Call ``begin`` first; every record returned is taken as emitted (its room is used).
        """
        room, stuck = self.room, self.stuck
        if self.held:
            for tp, held in self.held.items():
                if room.get(tp, 0) > 0 and not (stuck is not None and stuck(tp)):
                    room[tp] -= 1
                    record = held.popleft()
                    if not held:
                        del self.held[tp]
                    return record
        buffer = self.buffer
        while True:
            if not buffer and not self.poll():
                return None
            record = buffer.popleft()
            key = (record.topic(), record.partition())  # equal to, and hashed as, TopicPartition
            left = room.get(key)
            if left is None:  # not assigned (any more)
                continue
            if left <= 0 or key in self.held or (stuck is not None and stuck(key)):
                # at max_uncommitted_offsets: wait for commits (a poll may bring more than the limit)
                self.held.setdefault(key, deque()).append(record)
                continue
            room[key] = left - 1
            return record

    def poll(self) -> bool:
        """Fetch what the client has (pausing and resuming first); whether anything came."""
        if self.at_least_once:
            full = {tp for tp in self.book.assigned if self.full(tp) or tp in self.held}
            if full != self.paused:
                if full - self.paused:
                    self.consumer.pause([ktp(tp) for tp in full - self.paused])
                if self.paused - full:
                    self.consumer.resume([ktp(tp) for tp in self.paused - full])
                self.paused = full
        # called even with every partition paused: it serves the commit and error callbacks, and
        # a record fetched before a pause is held (``next_record``), never dropped
        self.take(self.consumer.consume(POLL_BATCH, self.poll_timeout_s))
        if self.buffer:
            self.health.up()
            if self.config.processing_guarantee is ProcessingGuarantee.AT_MOST_ONCE:
                self.commits.commit_positions(sync=True)  # before anything is emitted
        return bool(self.buffer)

    def take(self, records: list) -> None:
        """Buffer fetched records; an error among them goes to the health check."""
        if not records:
            return
        last: dict[tuple, int] = {}  # the next offset to fetch, per partition of the batch
        good = []
        for record in records:
            error = record.error()
            if error is not None:
                self.health.on_client_error(error)
                continue
            last[(record.topic(), record.partition())] = record.offset()
            good.append(record)
        fetched = self.book.fetched
        for (topic, partition), offset in last.items():
            fetched[TopicPartition(topic, partition)] = offset + 1
        self.buffer.extend(good)

    def serve(self) -> None:
        """One short poll: serves the client's callbacks (a commit's answer)."""
        self.take(self.consumer.consume(POLL_BATCH, 0.05))

    def assign(self, starts: list[tuple[TopicPartition, int]]) -> None:
        """Start fetching each partition at its offset."""
        self.consumer.incremental_assign([ktp(tp, start) for tp, start in starts])

    def unassign(self, moved: set[TopicPartition]) -> None:
        """Stop fetching ``moved`` and drop what was fetched of them but not emitted."""
        self.consumer.incremental_unassign([ktp(tp) for tp in moved])
        self.paused -= moved
        self.buffer = deque(r for r in self.buffer
                            if TopicPartition(r.topic(), r.partition()) not in moved)
        for tp in moved:
            self.held.pop(tp, None)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Fetch ``tp`` again from ``offset``, dropping what was fetched of it but not emitted."""
        ck = import_client()
        try:
            self.consumer.seek(ktp(tp, offset))
        except ck.KafkaException as e:
            if e.args[0].code() != ck.KafkaError._STATE:
                raise
            # just assigned, not yet fetching (librdkafka refuses the seek: "Erroneous
            # state"): assigning it again at the offset does what the seek would
            self.consumer.incremental_unassign([ktp(tp)])
            self.consumer.incremental_assign([ktp(tp, offset)])
        self.buffer = deque(r for r in self.buffer if (r.topic(), r.partition()) != tp)
        self.held.pop(tp, None)
        self.book.fetched[tp] = self.book.upto[tp] = offset
