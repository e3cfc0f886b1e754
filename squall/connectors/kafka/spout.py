"""``KafkaSpout``: storm-kafka-client's spout over confluent-kafka.

Partitions are assigned by hand (Storm's manual partitioner: sorted partitions round robin
over the spout's task indexes), refreshed every ``partition_refresh_period_ms``. Under
AT_LEAST_ONCE every tuple carries the msg id ``(topic, partition, offset)``; per partition an
``OffsetManager`` commits only the offset below which everything emitted is acked, every
``offset_commit_period_ms``, and polling pauses on a partition with ``max_uncommitted_offsets``
emitted but uncommitted. A failed record is retried after the retry service's backoff (from
the record kept in memory, translated again, rather than fetched again); past the retry limit
it goes to ``__dead_letter`` and counts as done once its dead letter is acked.

Handing a partition over: the task that reads a partition records itself as its owner
(``owners``: a side consumer group, since not every broker keeps commit metadata), and when a
new partition list moves the partition away, it stops fetching, lets what it emitted finish
(retries included), commits, and marks the partition released. The new owner starts once it
sees the release (or after the owner stayed silent for ``topology.message.timeout.secs`` plus
two refresh periods: a dead owner releases nothing), so a reassignment itself neither loses
nor repeats a record.

Calls that wait on the broker (listing partitions, committed offsets, watermarks) run on a
thread of the spout's own (``monitor``); ``next_tuple`` never waits (``poll_timeout_ms``
applies only to a task on a thread of its own, ``squall.task.threaded``).
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from typing import Any

from squall.api.components import OutputFieldsDeclarer, Spout
from squall.connectors.kafka.config import KafkaSpoutConfig, ProcessingGuarantee
from squall.connectors.kafka.monitor import CALL_TIMEOUT_S, Monitor, list_partitions
from squall.connectors.kafka.offsets import OffsetManager, TopicPartition
from squall.connectors.kafka.owners import Owner, decode, encode, owners_group, tag_of
from squall.connectors.kafka.partitioner import Timer, partitions_for_task
from squall.connectors.kafka.start import start_offset
from squall.connectors.reliable import DEAD_LETTER_STREAM, GivenUpError, _DeadLetterId, declare_dead_letter
from squall.connectors.replay import Letter
from squall.runtime import clock
from squall.runtime.failures import Failure, describe

log = logging.getLogger("squall.connectors.kafka")

TIMER_DELAY_MS = 500     # Storm's: the commit and refresh timers first expire after this
POLL_BATCH = 500         # records taken from the client per poll
OPEN_TIMEOUT_S = 10.0    # how long open waits for the bootstrap servers to answer
COMMIT_ANSWER_S = 30.0   # a commit unanswered this long is sent again (its answer is lost)


def import_client() -> Any:
    """confluent_kafka, or an error saying how to install it."""
    try:
        import confluent_kafka
    except ImportError as e:
        raise ImportError("squall.connectors.kafka needs confluent-kafka: pip install 'squall[kafka]'") from e
    return confluent_kafka


def _ktp(tp: TopicPartition, offset: int | None = None, metadata: str | None = None) -> Any:
    ck = import_client()
    if offset is None:
        return ck.TopicPartition(tp.topic, tp.partition)
    if metadata is None:
        return ck.TopicPartition(tp.topic, tp.partition, offset)
    return ck.TopicPartition(tp.topic, tp.partition, offset, metadata=metadata)


class KafkaSpout(Spout):
    """Records of Kafka topics as tuples (storm-kafka-client's ``KafkaSpout``)."""

    def __init__(self, config: KafkaSpoutConfig) -> None:
        if not isinstance(config, KafkaSpoutConfig):
            raise ValueError(f"KafkaSpout takes a KafkaSpoutConfig, got {config!r}")
        self.config = config

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The translator's streams (default: topic, partition, offset, key, value), and ``__dead_letter``."""
        if self.config.record_fields is not None:
            declarer.declare(self.config.record_fields)
        else:
            self.config.record_translator.declare(declarer)  # type: ignore[union-attr]
        declare_dead_letter(declarer)

    # ---- open / close ----------------------------------------------------------------------

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Check the broker and topics, take this task's partitions, start the monitor."""
        ck = import_client()
        cfg = self.config
        self.collector, self.context = collector, context
        self.component = context.component_id
        self.name = f"KafkaSpout {self.component!r} (task {context.task_id})"
        self.task_index = context.get_this_task_index()
        self.task_count = len(context.get_this_component_tasks())
        self.at_least_once = cfg.is_at_least_once()
        threaded = bool(conf.get("squall.task.threaded"))
        self.poll_timeout_s = cfg.poll_timeout_ms / 1000.0 if threaded else 0.0
        self.handover_s = float(conf.get("topology.message.timeout.secs") or 30) \
            + 2 * cfg.partition_refresh_period_ms / 1000.0
        self.retry = cfg.retry.fresh()
        # keyed by TopicPartition, looked up with plain (topic, partition) tuples (equal, same hash)
        self.managers: dict[Any, OffsetManager] = {}
        self.assigned: set[TopicPartition] = set()      # fetched now
        self.draining: set[TopicPartition] = set()      # moved away, finishing what was emitted
        self.waiting_handover: dict[TopicPartition, float] = {}  # ours, not yet released: since when
        self.fetched: dict[TopicPartition, int] = {}   # next offset to fetch
        self.upto: dict[Any, int] = {}                  # next offset to emit (position())
        self.emitted: set[tuple] = set()
        self.records: dict[tuple, Any] = {}             # in flight: msg id -> record, for retries
        self.fails: dict[tuple, int] = {}
        self.letters: dict[tuple, Letter] = {}
        self.letters_due: deque[tuple] = deque()
        self.buffer: deque[Any] = deque()
        self.held: dict[Any, deque[Any]] = {}  # records of partitions at the limit
        self.paused: set[TopicPartition] = set()
        self.watermarks: dict[TopicPartition, tuple[int, int]] = {}
        self.gauges: set[TopicPartition] = set()
        self.down: str | None = None
        self.commit_timer = Timer(TIMER_DELAY_MS, cfg.offset_commit_period_ms)
        self.refresh_timer = Timer(TIMER_DELAY_MS, cfg.partition_refresh_period_ms)
        self.metrics_timer = Timer(0, cfg.metrics_time_bucket_size_in_secs * 1000)
        self.timers_due = clock.monotonic()  # when the earliest of them expires
        self.commit_pending: tuple[frozenset, float] | None = None  # the async commit in flight
        props = {"bootstrap.servers": cfg.bootstrap_servers, "group.id": cfg.group_id,
                 "enable.auto.commit": False, "enable.auto.offset.store": False,
                 "enable.partition.eof": False, **cfg.consumer_props}
        self.consumer = ck.Consumer({**props, "error_cb": self._on_client_error,
                                     "on_commit": self._on_commit})
        self.owners = ck.Consumer({**props, "group.id": owners_group(cfg.group_id)})
        self.tag = tag_of(context.topology_name, self.component)
        down: list[Any] = []
        lookup = ck.Consumer({**props, "error_cb": down.append})
        try:
            partitions = self._first_partitions(ck, lookup, down)
        except ck.KafkaException as e:
            for c in (lookup, self.consumer, self.owners):
                c.close()
            raise ConnectionError(f"{self.name}: the Kafka bootstrap servers {cfg.bootstrap_servers} "
                                  f"cannot be reached: {e}") from None
        missing = sorted(set(cfg.topics or ()) - {tp.topic for tp in partitions})
        if missing:
            for c in (lookup, self.consumer, self.owners):
                c.close()
            raise ValueError(f"{self.name}: unknown topic{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)} on {cfg.bootstrap_servers}")
        self.monitor = Monitor(lookup, ck.Consumer({**props, "group.id": owners_group(cfg.group_id)}),
                               cfg.subscribes)
        self._register_metrics(context)
        self._reassign(partitions)

    def _first_partitions(self, ck: Any, lookup: Any, down: list) -> list[TopicPartition]:
        """The partitions, asked for until OPEN_TIMEOUT_S; refused at once when every broker is down."""
        deadline = time.monotonic() + OPEN_TIMEOUT_S  # a network wait: real time, even when simulating
        while True:
            try:
                return list_partitions(lookup, self.config.subscribes, timeout=0.5)
            except ck.KafkaException:
                lookup.poll(0)  # serves the error callback: connection refused comes as all brokers down
                if any(e.code() == ck.KafkaError._ALL_BROKERS_DOWN for e in down) \
                        or time.monotonic() >= deadline:
                    raise

    def close(self) -> None:
        """Commit what is acked, release every partition, and close the clients.

        With the broker unreachable the commits are sent without waiting for answers (a
        synchronous commit would hold the task for the client's request timeout).
        """
        sync = self.down is None
        try:
            self._commit_acked(sync=sync)
            self._release(set(self.managers) | self.assigned, sync=sync)
        finally:
            self.monitor.close()
            self.consumer.close()
            self.owners.close()

    def deactivate(self) -> None:
        """Commit what is acked (Storm's ``deactivate``)."""
        self._commit_acked()

    # ---- next_tuple ------------------------------------------------------------------------

    def next_tuple(self) -> None:
        """Take the monitor's answers, run due timers, then emit one retry, letter or record."""
        if self.monitor.results:
            while True:
                answer = self.monitor.take()
                if answer is None:
                    break
                self._on_answer(*answer)
        if clock.monotonic() >= self.timers_due:
            self._run_timers()
        if self.letters_due:
            self._emit_letter(self.letters_due.popleft())
            return
        if self.retry:  # something waits for a retry
            retry = self.retry.pop_ready()
            if retry is not None and retry in self.records:
                self._emit(self.records[retry], retry)
                return
        while True:
            record = self._next_record()
            if record is None:
                return
            msg_id = (record.topic(), record.partition(), record.offset())
            self.upto[msg_id[:2]] = msg_id[2] + 1
            if self._emit(record, msg_id):
                return

    def _run_timers(self) -> None:
        if self.refresh_timer.is_expired_reset_on_true():
            self.monitor.request("partitions")
        if self.metrics_timer.is_expired_reset_on_true() and self.assigned:
            self.monitor.request("watermarks", sorted(self.assigned))
        if self.commit_timer.is_expired_reset_on_true():
            if self.at_least_once:
                self._commit_acked()
            elif self.config.processing_guarantee is ProcessingGuarantee.NO_GUARANTEE:
                self._commit_positions(sync=False)
        self.timers_due = min(t.next_due for t in (self.refresh_timer, self.metrics_timer, self.commit_timer))

    def _full(self, tp: tuple) -> bool:
        return self.at_least_once and \
            len(self.managers[tp]._emitted) >= self.config.max_uncommitted_offsets

    def _next_record(self) -> Any:
        """The next record to emit: held ones of partitions with room again first, in order."""
        for tp, held in self.held.items():
            if not self._full(tp):
                record = held.popleft()
                if not held:
                    del self.held[tp]
                return record
        while True:
            if not self.buffer and not self._poll():
                return None
            record = self.buffer.popleft()
            key = (record.topic(), record.partition())  # equal to, and hashed as, TopicPartition
            if key not in self.assigned:
                continue
            if key in self.held or self._full(key):
                # at max_uncommitted_offsets: wait for commits (a poll may bring more than the limit)
                self.held.setdefault(key, deque()).append(record)
                continue
            return record

    def _poll(self) -> bool:
        if self.at_least_once:
            full = {tp for tp in self.assigned if self._full(tp) or tp in self.held}
            if full != self.paused:
                if full - self.paused:
                    self.consumer.pause([_ktp(tp) for tp in full - self.paused])
                if self.paused - full:
                    self.consumer.resume([_ktp(tp) for tp in self.paused - full])
                self.paused = full
        # called even with every partition paused: it serves the commit and error callbacks, and
        # a record fetched before a pause is held (``_next_record``), never dropped
        self._take(self.consumer.consume(POLL_BATCH, self.poll_timeout_s))
        if self.buffer:
            self._up()
            if self.config.processing_guarantee is ProcessingGuarantee.AT_MOST_ONCE:
                self._commit_positions(sync=True)  # before anything is emitted
        return bool(self.buffer)

    def _take(self, records: list) -> None:
        for record in records:
            error = record.error()
            if error is not None:
                self._on_client_error(error)
                continue
            self.fetched[TopicPartition(record.topic(), record.partition())] = record.offset() + 1
            self.buffer.append(record)

    def _emit(self, record: Any, msg_id: tuple) -> bool:
        """Translate and emit one record; False if it was skipped (a null tuple)."""
        try:
            out = self.config.record_translator(record)
        except Exception as e:  # noqa: BLE001 - the record stays in flight and is retried
            self.collector.report_error(RuntimeError(
                f"{self.name}: the record translator raised on {msg_id[0]}-{msg_id[1]} offset "
                f"{msg_id[2]}: {type(e).__name__}: {e}"))
            if self.at_least_once:
                self._track(msg_id, record)
                self.fail_with_reason(msg_id, Failure("error", describe(e), self.component,
                                                      self.context.task_id))
            return True
        stream = "default"
        if type(out) is not list and isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], str):
            stream, out = out
        if out is None and not self.config.emit_null_tuples:
            if self.at_least_once:  # nothing to track: it counts as acked at once
                manager = self.managers[(msg_id[0], msg_id[1])]
                manager.add_to_emit_msgs(msg_id[2])
                manager.add_to_ack_msgs(msg_id[2])
            return False
        values = out if type(out) is list else [] if out is None else list(out)
        if self.at_least_once:
            self._track(msg_id, record)
            self.collector.emit(values, stream=stream, msg_id=msg_id)
        elif self.config.tuple_tracking:
            self.collector.emit(values, stream=stream, msg_id=msg_id)
        else:
            self.collector.emit(values, stream=stream)
        return True

    def _track(self, msg_id: tuple, record: Any) -> None:
        self.emitted.add(msg_id)
        self.records[msg_id] = record
        self.managers[(msg_id[0], msg_id[1])].add_to_emit_msgs(msg_id[2])

    # ---- positions (a seekable spout) ------------------------------------------------------

    def position(self) -> list[list]:
        """Where this task stands: ``[topic, partition, next offset to emit]`` per partition it reads."""
        return [[tp[0], tp[1], self.upto.get(tp, self.fetched.get(tp, 0))] for tp in sorted(self.assigned)]

    def seek(self, position: list[list]) -> None:
        """Read each partition again from the offset ``position`` gives (``position()``'s form).

        What was emitted at or past that offset is forgotten without ``fail`` (it is read
        again); partitions this task does not read are ignored.
        """
        for topic, partition, offset in position:
            tp = TopicPartition(topic, int(partition))
            if tp not in self.assigned:
                continue
            offset = int(offset)
            self.consumer.seek(_ktp(tp, offset))
            self.buffer = deque(r for r in self.buffer if (r.topic(), r.partition()) != tp)
            self.held.pop(tp, None)
            self.fetched[tp] = self.upto[tp] = offset
            for m in [m for m in self.records if m[:2] == tp and m[2] >= offset]:
                self.emitted.discard(m)
                self.records.pop(m, None)
                self.fails.pop(m, None)
                self.retry.remove(m)
            manager = self.managers.get(tp)
            if manager is not None:
                self.managers[tp] = _rewound(manager, offset)

    # ---- ack / fail ------------------------------------------------------------------------

    def ack(self, msg_id: Any) -> None:
        """Its tree completed: the offset may now be committed."""
        if isinstance(msg_id, _DeadLetterId):
            mid = tuple(msg_id.msg_id)
            if self.letters.pop(mid, None) is not None:
                self._done(mid)
            return
        if not self.at_least_once:
            return
        mid = msg_id if type(msg_id) is tuple else tuple(msg_id)
        if mid in self.emitted:
            self._done(mid)

    def _done(self, mid: tuple) -> None:
        self.emitted.discard(mid)
        del self.records[mid]
        if self.fails:
            self.fails.pop(mid, None)
        manager = self.managers.get((mid[0], mid[1]))
        if manager is not None and mid[2] >= manager.committed_offset:
            manager.add_to_ack_msgs(mid[2])

    def fail(self, msg_id: Any) -> None:
        """Its tree failed: retry after the backoff, or give it up."""
        self.fail_with_reason(msg_id, Failure("failed"))

    def fail_with_reason(self, msg_id: Any, failure: Failure) -> None:
        """As ``fail``, with why and where (the runtime's call): the dead letter carries it."""
        if isinstance(msg_id, _DeadLetterId):
            mid = tuple(msg_id.msg_id)
            if mid in self.letters:
                self.letters_due.append(mid)  # a dead letter is never given up
            return
        if not self.at_least_once:
            return
        mid = tuple(msg_id)
        if mid not in self.emitted or self.retry.is_scheduled(mid):
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
        self._emit_letter(mid)

    def _emit_letter(self, mid: tuple) -> None:
        letter = self.letters.get(mid)
        if letter is not None:
            self.collector.emit(list(letter), stream=DEAD_LETTER_STREAM, msg_id=_DeadLetterId(mid))

    # ---- commits ---------------------------------------------------------------------------

    def _metadata(self, released: bool = False) -> str:
        return json.dumps({"topology": self.context.topology_name, "component": self.component,
                           "task": self.context.task_id, "released": released})

    def _commit_acked(self, sync: bool = False) -> None:
        if not self.at_least_once:
            return
        offsets = []
        for tp, manager in self.managers.items():
            nxt = manager.find_next_commit_offset()
            if nxt is not None:
                offsets.append(_ktp(tp, nxt, self._metadata()))
        if offsets:
            self._send_commit(offsets, sync)
        for tp in [tp for tp in self.draining if not self.managers[tp].num_uncommitted_offsets()
                   or self._drained(tp)]:
            self._release({tp})

    def _drained(self, tp: TopicPartition) -> bool:
        manager = self.managers[tp]
        nxt = manager.find_next_commit_offset()
        return nxt is not None and manager.latest_emitted_offset is not None \
            and nxt > manager.latest_emitted_offset

    def _commit_positions(self, sync: bool) -> None:
        offsets = [_ktp(tp, self.fetched[tp], self._metadata())
                   for tp in self.assigned if tp in self.fetched]
        if offsets:
            self._send_commit(offsets, sync)

    def _send_commit(self, offsets: list, sync: bool) -> None:
        """Commit ``offsets``; one asynchronous commit at a time.

        Two in flight may land out of order (the later first, then the earlier over it).
        """
        ck = import_client()
        try:
            if sync:
                self._settle()
                done = self.consumer.commit(offsets=offsets, asynchronous=False)
                self._on_commit(None, done)
                return
            if self.commit_pending is not None:
                if time.monotonic() - self.commit_pending[1] < COMMIT_ANSWER_S:
                    return  # the next commit period sends what is ready then
                log.warning("%s: no answer to a commit in %ss; committing again", self.name,
                            COMMIT_ANSWER_S)
            self.commit_pending = (_commit_key(offsets), time.monotonic())
            self.consumer.commit(offsets=offsets, asynchronous=True)
        except ck.KafkaException as e:
            self._unreachable(f"commit failed: {e}")

    def _settle(self) -> None:
        """Wait (up to the call timeout) for the answer to an asynchronous commit in flight."""
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while self.commit_pending is not None and time.monotonic() < deadline:
            self._take(self.consumer.consume(POLL_BATCH, 0.05))  # serves the commit callback

    def _on_commit(self, error: Any, partitions: list) -> None:
        """The broker's answer to a commit (called on this task's thread, from poll)."""
        if self.commit_pending is not None and _commit_key(partitions or ()) == self.commit_pending[0]:
            self.commit_pending = None
        if error is not None:
            self._on_client_error(error)
            return
        for k in partitions or ():
            tp = TopicPartition(k.topic, k.partition)
            manager = self.managers.get(tp)
            if k.error is None and manager is not None and k.offset >= manager.committed_offset:
                manager.commit(k.offset)

    def _release(self, tps: set[TopicPartition], sync: bool = False) -> None:
        """Commit where each partition stands, marked released, and forget it."""
        offsets = []
        for tp in tps:
            manager = self.managers.pop(tp, None)
            self.draining.discard(tp)
            if manager is not None:
                nxt = manager.find_next_commit_offset()
                offsets.append(_ktp(tp, nxt if nxt is not None else manager.committed_offset,
                                    self._metadata(released=True)))
            elif tp in self.fetched:
                offsets.append(_ktp(tp, self.fetched[tp], self._metadata(released=True)))
            self._forget(tp)
        if offsets:  # landed before the release is marked: the next owner starts from it
            self._send_commit(offsets, sync=sync or self.down is None)
        self._mark_owner(tps, released=True)

    def _mark_owner(self, tps: Any, released: bool) -> None:
        """Commit this task as the owner of ``tps`` in the side group (see ``owners``)."""
        if not tps:
            return
        code = encode(Owner(self.tag, self.context.task_id, released))
        try:  # synchronous when it can be: a mark landing after a later one would undo it
            self.owners.commit(offsets=[_ktp(tp, code) for tp in tps], asynchronous=self.down is not None)
        except import_client().KafkaException as e:
            self._unreachable(f"commit failed: {e}")

    def _forget(self, tp: TopicPartition) -> None:
        gone = [m for m in self.records if TopicPartition(m[0], m[1]) == tp]
        for m in gone:
            self.emitted.discard(m)
            self.records.pop(m, None)
            self.fails.pop(m, None)
            self.retry.remove(m)
        self.fetched.pop(tp, None)
        self.watermarks.pop(tp, None)

    # ---- assignment ------------------------------------------------------------------------

    def _on_answer(self, kind: str, payload: Any, error: str | None) -> None:
        if error is not None:
            self._unreachable(error)
            return
        self._up()
        if kind == "partitions":
            self._reassign(payload)
        elif kind == "committed":
            self._take_over(payload)
        elif kind == "watermarks":
            self.watermarks.update(payload)

    def _reassign(self, partitions: list[TopicPartition]) -> None:
        mine = partitions_for_task(partitions, self.task_index, self.task_count)
        moved = self.assigned - mine
        if moved:
            log.info("%s: partitions %s moved to other tasks; finishing what was emitted",
                     self.name, sorted(moved))
            self.consumer.incremental_unassign([_ktp(tp) for tp in moved])
            self.assigned -= moved
            self.paused -= moved
            self.buffer = deque(r for r in self.buffer
                                if TopicPartition(r.topic(), r.partition()) not in moved)
            for tp in moved:
                self.held.pop(tp, None)
            if self.at_least_once:
                self.draining |= moved
                self._commit_acked()
            else:
                self._release(moved)
        for tp in list(self.waiting_handover):
            if tp not in mine:
                del self.waiting_handover[tp]
        new = sorted(mine - self.assigned - self.draining)
        now = clock.monotonic()
        for tp in new:
            self.waiting_handover.setdefault(tp, now)
        if self.waiting_handover:
            self.monitor.request("committed", sorted(self.waiting_handover))

    def _take_over(self, committed: dict[TopicPartition, tuple[int, int, int, int]]) -> None:
        """Start reading each partition whose previous owner released it (or is gone)."""
        now = clock.monotonic()
        take = []
        for tp, (offset, code, lo, hi) in sorted(committed.items()):
            since = self.waiting_handover.get(tp)
            if since is None:
                continue
            owner = decode(code)
            same_topology = owner is not None and owner.tag == self.tag
            busy = owner is not None and same_topology and not owner.released \
                and owner.task != self.context.task_id \
                and owner.task in self.context.get_this_component_tasks()
            if busy and now - since < self.handover_s:
                continue  # its previous owner is finishing it: ask again at the next refresh
            self.watermarks[tp] = (lo, hi)
            start = start_offset(self.config.first_poll_offset_strategy, offset if offset >= 0 else None,
                                 same_topology, lo, hi)
            del self.waiting_handover[tp]
            take.append((tp, start))
        if not take:
            return
        for tp, start in take:
            self.assigned.add(tp)
            self.fetched[tp] = start
            if self.at_least_once:
                self.managers[tp] = OffsetManager(tp, start)
        self.consumer.incremental_assign([_ktp(tp, start) for tp, start in take])
        self._ensure_gauges()
        # this task is the owner now: a later owner waits for its release
        self._mark_owner([tp for tp, _ in take], released=False)
        log.info("%s: reading %s", self.name, ", ".join(f"{tp.topic}-{tp.partition}@{s}" for tp, s in take))

    # ---- health ----------------------------------------------------------------------------

    def _on_client_error(self, error: Any) -> None:
        ck = import_client()
        code = error.code() if hasattr(error, "code") else None
        if code in (ck.KafkaError._ALL_BROKERS_DOWN, ck.KafkaError._TRANSPORT, ck.KafkaError._TIMED_OUT,
                    ck.KafkaError._RESOLVE, ck.KafkaError._MSG_TIMED_OUT):
            self._unreachable(str(error))
        elif code == ck.KafkaError.UNKNOWN_TOPIC_OR_PART:
            self.collector.report_error(RuntimeError(f"{self.name}: {error}"))
        else:
            log.warning("%s: %s", self.name, error)

    def _unreachable(self, why: str) -> None:
        if self.down is None:  # once per outage
            self.down = why
            self.collector.report_error(ConnectionError(
                f"{self.name}: Kafka at {self.config.bootstrap_servers} cannot be reached: {why}"))

    def _up(self) -> None:
        if self.down is not None:
            log.info("%s: Kafka at %s answers again", self.name, self.config.bootstrap_servers)
            self.down = None

    # ---- metrics ---------------------------------------------------------------------------

    def _register_metrics(self, context: Any) -> None:
        self.metrics_on = callable(getattr(context, "register_gauge", None))
        if self.metrics_on:
            context.register_gauge("kafkaOffset/totalSpoutLag", self.total_lag)
            context.register_gauge("kafkaOffset/brokerReachable", lambda: 0 if self.down else 1)

    def offsets(self, tp: TopicPartition) -> dict[str, int | None]:
        """earliest, latest, latest_emitted, latest_committed and lag of one partition."""
        lo, hi = self.watermarks.get(tp, (None, None))
        manager = self.managers.get(tp)
        if manager is not None:
            committed: int | None = manager.committed_offset
            emitted = manager.latest_emitted_offset
        else:
            committed = self.fetched.get(tp)
            emitted = None if committed is None else committed - 1
        lag = None if hi is None or committed is None else max(0, hi - committed)
        return {"earliest": lo, "latest": hi, "latest_emitted": emitted, "latest_committed": committed,
                "lag": lag}

    def total_lag(self) -> int:
        """The lag summed over this task's partitions (Storm's ``totalSpoutLag``)."""
        return sum(self.offsets(tp)["lag"] or 0 for tp in list(self.assigned))

    def _ensure_gauges(self) -> None:
        # a gauge per partition and figure, registered the first time this task reads it
        if not self.metrics_on:
            return
        for tp in list(self.assigned):
            if tp in self.gauges:
                continue
            self.gauges.add(tp)
            for field in ("earliest", "latest", "latest_emitted", "latest_committed", "lag"):
                self.context.register_gauge(
                    f"kafkaOffset/{tp.topic}/partition_{tp.partition}/{field}",
                    lambda tp=tp, field=field: self.offsets(tp)[field] if tp in self.assigned else None)


def _commit_key(offsets: Any) -> frozenset:
    return frozenset((k.topic, k.partition, k.offset) for k in offsets)


def _rewound(manager: OffsetManager, offset: int) -> OffsetManager:
    """``manager`` without what was emitted or acked at or past ``offset``."""
    fresh = OffsetManager(manager.tp, min(offset, manager.committed_offset))
    fresh.committed = manager.committed
    for o in manager._emitted:
        if o < offset:
            fresh.add_to_emit_msgs(o)
            if manager.contains(o):
                fresh.add_to_ack_msgs(o)
    return fresh


def _default_values(record: Any) -> list:
    if record is None:
        return []
    return [record.topic(), record.partition(), record.offset(), record.key(), record.value()]
