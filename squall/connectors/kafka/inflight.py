"""The spout's records in flight: emitting them, their acks and fails, retries, dead letters."""

from __future__ import annotations

from collections import deque
from typing import Any

from squall.connectors.kafka.book import Book
from squall.connectors.kafka.config import KafkaSpoutConfig
from squall.connectors.kafka.offsets import TopicPartition
from squall.connectors.reliable import DEAD_LETTER_STREAM, GivenUpError, _DeadLetterId
from squall.connectors.replay import Letter
from squall.runtime.failures import Failure, describe


class InFlight:
    """Under AT_LEAST_ONCE every tuple carries the msg id ``(topic, partition, offset)``.

    A failed record is retried after the retry service's backoff (from the record kept here,
    translated again, rather than fetched again); past the retry limit it goes to
    ``__dead_letter`` and counts as done once its dead letter is acked.
    """

    def __init__(self, config: KafkaSpoutConfig, book: Book, collector: Any, name: str, context: Any) -> None:
        self.config, self.book, self.collector = config, book, collector
        self.name, self.component, self.task_id = name, context.component_id, context.task_id
        self.at_least_once = config.is_at_least_once()
        self.retry = config.retry.fresh()
        # in flight (emitted, not yet done): msg id -> record, for retries
        self.records: dict[tuple, Any] = {}
        self.managers = book.managers
        self.fails: dict[tuple, int] = {}
        self.letters: dict[tuple, Letter] = {}
        self.letters_due: deque[tuple] = deque()
        # per partition, offsets read but not out of the spout: the translator or the emit
        # raised, a retry or a dead letter waits; ``position()`` stays below them
        self.held_back: dict[tuple, set[int]] = {}

    def emit_due(self) -> bool:
        """Emit one failed dead letter or one retry that is due; whether one was."""
        if self.letters_due:
            self.emit_letter(self.letters_due.popleft())
            return True
        if self.retry:  # something waits for a retry
            retry = self.retry.pop_ready()
            if retry is not None and retry in self.records:
                self.emit(self.records[retry], retry)
                return True
        return False

    def emit(self, record: Any, msg_id: tuple) -> bool:
        """Translate and emit one record; False if it was skipped (a null tuple)."""
        try:
            out = self.config.record_translator(record)
        except Exception as e:  # noqa: BLE001 - the record stays in flight and is retried
            self.collector.report_error(RuntimeError(
                f"{self.name}: the record translator raised on {msg_id[0]}-{msg_id[1]} offset "
                f"{msg_id[2]}: {type(e).__name__}: {e}"))
            if self.at_least_once:
                self.track(msg_id, record)
                self.hold_back(msg_id)
                self.fail_with_reason(msg_id, Failure("error", describe(e), self.component, self.task_id))
            return True
        stream = "default"
        if type(out) is not list and isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], str):
            stream, out = out
        if out is None and not self.config.emit_null_tuples:
            if self.at_least_once:  # nothing to track: it counts as acked at once
                manager = self.book.managers[(msg_id[0], msg_id[1])]
                manager.add_to_emit_msgs(msg_id[2])
                manager.add_to_ack_msgs(msg_id[2])
                self.let_go(msg_id)
            return False
        values = out if type(out) is list else [] if out is None else list(out)
        if self.at_least_once:
            records = self.records
            if msg_id not in records:  # a retry is in already
                records[msg_id] = record
                self.managers[(msg_id[0], msg_id[1])].add_to_emit_msgs(msg_id[2])
            try:
                self.collector.emit(values, stream=stream, msg_id=msg_id)
            except Exception as e:
                # exactly-once emits are untracked, so no ``fail`` comes: retry it here (a
                # tracked emit's ``fail`` that follows is a second verdict, ignored)
                self.hold_back(msg_id)
                self.fail_with_reason(msg_id, Failure("error", describe(e), self.component, self.task_id))
                raise
            if self.held_back:  # per record: the dict is empty unless a record is stuck
                self.let_go(msg_id)
        elif self.config.tuple_tracking:
            self.collector.emit(values, stream=stream, msg_id=msg_id)
        else:
            self.collector.emit(values, stream=stream)
        return True

    def hold_back(self, mid: tuple) -> None:
        """``mid`` was read but did not leave the spout: the position stays below it."""
        self.held_back.setdefault((mid[0], mid[1]), set()).add(mid[2])

    def let_go(self, mid: tuple) -> None:
        """``mid`` left the spout (as a tuple or a dead letter), or is done or forgotten."""
        held = self.held_back.get((mid[0], mid[1]))
        if held is not None:
            held.discard(mid[2])
            if not held:
                del self.held_back[(mid[0], mid[1])]

    def lowest_held_back(self, tp: tuple) -> int | None:
        """The lowest offset of ``tp`` read but not out of the spout, if any."""
        held = self.held_back.get(tp)
        return min(held) if held else None

    def track(self, msg_id: tuple, record: Any) -> None:
        """Keep ``record`` until its tree completes or is given up."""
        self.records[msg_id] = record
        self.managers[(msg_id[0], msg_id[1])].add_to_emit_msgs(msg_id[2])

    def ack(self, msg_id: Any) -> None:
        """Its tree completed: the offset may now be committed."""
        if type(msg_id) is tuple and self.at_least_once:  # a record's tree: the common case
            if msg_id in self.records:
                self.done(msg_id)
            return
        if isinstance(msg_id, _DeadLetterId):
            mid = tuple(msg_id.msg_id)
            if self.letters.pop(mid, None) is not None:
                self.done(mid)
            return
        if not self.at_least_once:
            return
        mid = msg_id if type(msg_id) is tuple else tuple(msg_id)
        if mid in self.records:
            self.done(mid)

    def done(self, mid: tuple) -> None:
        """``mid`` is finished (acked, or its dead letter acked): its offset counts as acked."""
        del self.records[mid]
        if self.held_back:
            self.let_go(mid)
        if self.fails:
            self.fails.pop(mid, None)
        manager = self.managers.get((mid[0], mid[1]))
        if manager is not None and mid[2] >= manager.committed_offset:
            manager._acked.add(mid[2])  # add_to_ack_msgs, inlined: once per record

    def fail_with_reason(self, msg_id: Any, failure: Failure) -> None:
        """Its tree failed: retry after the backoff, or give it up to ``__dead_letter``."""
        if isinstance(msg_id, _DeadLetterId):
            mid = tuple(msg_id.msg_id)
            if mid in self.letters:
                self.letters_due.append(mid)  # a dead letter is never given up
            return
        if not self.at_least_once:
            return
        mid = tuple(msg_id)
        if mid not in self.records or self.retry.is_scheduled(mid):
            return  # moved to another task since, or a second verdict for one emit
        n = self.fails.get(mid, 0) + 1
        self.fails[mid] = n
        if self.retry.schedule(mid, n):
            return
        record = self.records.get(mid)
        letter = Letter(list(mid), _default_values(record), failure.reason, failure.error,
                        failure.component, failure.task, n)
        self.collector.report_error(GivenUpError(
            f"{self.name}: record {mid[0]}-{mid[1]} offset {mid[2]} failed {n} times "
            f"(max_retries={self.retry.max_retries}, last reason: {failure.reason}): "
            f"sent to {DEAD_LETTER_STREAM}"))
        self.letters[mid] = letter
        self.emit_letter(mid)

    def emit_letter(self, mid: tuple) -> None:
        """Emit the dead letter of ``mid`` (again, after its emit failed)."""
        letter = self.letters.get(mid)
        if letter is not None:
            self.hold_back(mid)
            self.collector.emit(list(letter), stream=DEAD_LETTER_STREAM, msg_id=_DeadLetterId(mid))
            self.let_go(mid)

    def rewind(self, tp: TopicPartition, offset: int) -> None:
        """A seek of ``tp`` to ``offset`` (a committed checkpoint's): done below it, forgotten from it."""
        for m in [m for m in self.records if TopicPartition(m[0], m[1]) == tp]:
            self.letters.pop(m, None)
            self.retry.remove(m)
            if m[2] < offset:
                self.done(m)
        if self.letters_due:
            self.letters_due = deque(m for m in self.letters_due if m in self.letters)
        self.forget(tp, offset)

    def forget(self, tp: TopicPartition, offset: int = 0) -> None:
        """Drop what is in flight of ``tp`` at or past ``offset``, without ``fail``."""
        for m in [m for m in self.records if TopicPartition(m[0], m[1]) == tp and m[2] >= offset]:
            self.let_go(m)
            self.records.pop(m, None)
            self.fails.pop(m, None)
            self.retry.remove(m)


def _default_values(record: Any) -> list:
    if record is None:
        return []
    return [record.topic(), record.partition(), record.offset(), record.key(), record.value()]
