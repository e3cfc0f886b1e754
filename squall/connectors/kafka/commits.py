"""The spout's commits to its consumer group: what is acked (or fetched), one at a time."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from squall.connectors.kafka.book import Book
from squall.connectors.kafka.client import commit_key, import_client, ktp
from squall.connectors.kafka.health import Health
from squall.connectors.kafka.monitor import CALL_TIMEOUT_S
from squall.connectors.kafka.offsets import TopicPartition

log = logging.getLogger("squall.connectors.kafka")

COMMIT_ANSWER_S = 30.0   # a commit unanswered this long is sent again (its answer is lost)


class Commits:
    """Commits of one spout task's consumer, on the task's thread.

    ``bind`` gives it the consumer (whose ``on_commit`` callback is ``on_commit``) and a way
    to serve the consumer's callbacks while a synchronous commit waits for an earlier one.
    """

    def __init__(self, name: str, context: Any, book: Book, health: Health) -> None:
        self.name, self.context, self.book, self.health = name, context, book, health
        self.consumer: Any = None
        self.serve: Callable[[], None] = lambda: None
        self.pending: tuple[frozenset, float] | None = None  # the async commit in flight
        self.answered: dict[frozenset, bool] = {}  # async commits waited for: key -> landed

    def bind(self, consumer: Any, serve: Callable[[], None]) -> None:
        """The consumer to commit with, and what serves its callbacks (one poll)."""
        self.consumer, self.serve = consumer, serve

    def metadata(self, released: bool = False) -> str:
        """The commit metadata naming this task (for tools; see ``owners``)."""
        return json.dumps({"topology": self.context.topology_name, "component": self.context.component_id,
                           "task": self.context.task_id, "released": released})

    def commit_acked(self, sync: bool = False) -> None:
        """Commit, per partition, the offset below which everything emitted is acked."""
        offsets = []
        owed = self.book.owed
        for tp, manager in self.book.managers.items():
            nxt = manager.find_next_commit_offset()
            if owed and tp in owed and (nxt is None or nxt < owed[tp]):
                nxt = max(owed[tp], manager.committed_offset)
            if nxt is not None:
                offsets.append(ktp(tp, nxt, self.metadata()))
        if offsets:
            self.send(offsets, sync)

    def drained(self, tp: TopicPartition) -> bool:
        """Whether everything emitted of ``tp`` is acked."""
        manager = self.book.managers[tp]
        nxt = manager.find_next_commit_offset()
        return nxt is not None and manager.latest_emitted_offset is not None \
            and nxt > manager.latest_emitted_offset

    def commit_positions(self, sync: bool) -> None:
        """Commit the next offset to fetch of every partition read (the non-acking guarantees)."""
        offsets = [ktp(tp, self.book.fetched[tp], self.metadata())
                   for tp in self.book.assigned if tp in self.book.fetched]
        if offsets:
            self.send(offsets, sync)

    def send(self, offsets: list, sync: bool) -> frozenset | None:
        """Commit ``offsets``; one asynchronous commit at a time.

        Two in flight may land out of order (the later first, then the earlier over it).
        Returns the asynchronous commit's key (see ``landed``), or None when nothing was sent.
        """
        ck = import_client()
        try:
            if sync:
                self.settle()
                done = self.consumer.commit(offsets=offsets, asynchronous=False)
                self.on_commit(None, done)
                return None
            if self.pending is not None:
                if time.monotonic() - self.pending[1] < COMMIT_ANSWER_S:
                    return None  # the next commit period sends what is ready then
                log.warning("%s: no answer to a commit in %ss; committing again", self.name,
                            COMMIT_ANSWER_S)
            key = commit_key(offsets)
            self.pending = (key, time.monotonic())
            self.consumer.commit(offsets=offsets, asynchronous=True)
            return key
        except ck.KafkaException as e:
            self.pending = None
            self.health.unreachable(f"commit failed: {e}")
            return None

    def send_awaited(self, offsets: list) -> frozenset | None:
        """``send`` asynchronously, its answer kept for ``landed`` (None: not sent, try again)."""
        key = self.send(offsets, sync=False)
        if key is not None:
            self.answered.pop(key, None)
        return key

    def landed(self, key: frozenset) -> bool | None:
        """Whether the commit ``key`` landed (True), failed (False), or is not answered yet (None)."""
        if self.pending is not None and self.pending[0] == key:
            return None
        return self.answered.pop(key, False)

    def settle(self) -> None:
        """Wait (up to the call timeout) for the answer to an asynchronous commit in flight."""
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while self.pending is not None and time.monotonic() < deadline:
            self.serve()  # serves the commit callback

    def on_commit(self, error: Any, partitions: list) -> None:
        """The broker's answer to a commit (called on this task's thread, from poll)."""
        key = commit_key(partitions or ())
        if self.pending is not None and key == self.pending[0]:
            self.pending = None
        self.answered[key] = error is None and all(k.error is None for k in partitions or ())
        if len(self.answered) > 64:  # answers nobody waits for (the periodic commits')
            self.answered.pop(next(iter(self.answered)))
        if error is not None:
            self.health.on_client_error(error)
            return
        for k in partitions or ():
            tp = TopicPartition(k.topic, k.partition)
            manager = self.book.managers.get(tp)
            if k.error is None and manager is not None and k.offset >= manager.committed_offset:
                manager.commit(k.offset)
            if k.error is None and tp in self.book.owed and k.offset >= self.book.owed[tp]:
                del self.book.owed[tp]
