"""``KafkaSpout``: storm-kafka-client's spout over confluent-kafka.

Partitions are assigned by hand (Storm's manual partitioner: sorted partitions round robin
over the spout's task indexes), refreshed every ``partition_refresh_period_ms``. Under
AT_LEAST_ONCE every tuple carries the msg id ``(topic, partition, offset)``; per partition an
``OffsetManager`` commits only the offset below which everything emitted is acked, every
``offset_commit_period_ms``, and polling pauses on a partition with ``max_uncommitted_offsets``
emitted but uncommitted. A failed record is retried after the retry service's backoff (from
the record kept in memory, translated again, rather than fetched again); past the retry limit
it goes to ``__dead_letter`` and counts as done once its dead letter is acked. In
exactly-once mode a record that is not out of the spout (its translator or emit raised)
holds its partition's later records back until it is.

Handing a partition over: the task that reads a partition records itself as its owner
(``owners``: a side consumer group, since not every broker keeps commit metadata), and when a
new partition list moves the partition away, it stops fetching, lets what it emitted finish
(retries included), and as its last ack arrives commits and marks the partition released.
The new owner starts once it sees the release (or after the owner stayed silent for the
larger of ``topology.message.timeout.secs`` and ``offset_commit_period_ms``, plus two refresh
periods, plus a checkpoint interval in exactly-once mode: a dead owner releases nothing), so a
reassignment itself neither loses nor repeats a record.

Calls that wait on the broker (listing partitions, committed offsets, watermarks) run on a
thread of the spout's own (``monitor``); commits and owner marks are sent asynchronously;
``next_tuple`` never waits (``poll_timeout_ms`` applies only to a task on a thread of its own,
``squall.task.threaded``). Only ``close`` waits for its commits, while the broker answers.
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any

from squall.api.components import OutputFieldsDeclarer, SeekableSpout
from squall.connectors.kafka.book import Book
from squall.connectors.kafka.client import import_client
from squall.connectors.kafka.commits import Commits
from squall.connectors.kafka.config import FirstPollOffsetStrategy, KafkaSpoutConfig, ProcessingGuarantee
from squall.connectors.kafka.fetcher import Fetcher
from squall.connectors.kafka.gauges import Gauges
from squall.connectors.kafka.handover import Handover, check_in_range
from squall.connectors.kafka.health import Health
from squall.connectors.kafka.inflight import InFlight
from squall.connectors.kafka.monitor import Monitor, list_partitions
from squall.connectors.kafka.offsets import OffsetManager, TopicPartition
from squall.connectors.kafka.owners import owners_group
from squall.connectors.kafka.partitioner import Timer
from squall.connectors.reliable import declare_dead_letter
from squall.runtime import clock
from squall.runtime.failures import Failure

__all__ = ["KafkaSpout", "import_client"]

log = logging.getLogger("squall.connectors.kafka")

TIMER_DELAY_MS = 500     # Storm's: the commit and refresh timers first expire after this
OPEN_TIMEOUT_S = 10.0    # how long open waits for the bootstrap servers to answer


class KafkaSpout(SeekableSpout):
    """Records of Kafka topics as tuples (storm-kafka-client's ``KafkaSpout``).

    The spout wires its parts, each on the task's thread: ``fetcher`` (the consumer),
    ``inflight`` (acks, fails, retries, dead letters), ``commits``, ``handover`` (partition
    ownership), ``gauges``, ``health``, and ``monitor`` (the thread for calls that wait).
    """

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

    @property
    def assigned(self) -> set[TopicPartition]:
        """The partitions this task fetches now."""
        return self.book.assigned

    @property
    def watermarks(self) -> dict[TopicPartition, tuple[int, int]]:
        """The last (earliest, latest) offsets read of each partition."""
        return self.book.watermarks

    # ---- open / close ----------------------------------------------------------------------

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Check the broker and topics, take this task's partitions, start the monitor."""
        ck = import_client()
        self.collector, self.context = collector, context
        self.name = f"KafkaSpout {context.component_id!r} (task {context.task_id})"
        self.exactly_once = conf.get("topology.guarantee") == "exactly_once"
        if self.exactly_once and not self.config.is_at_least_once():
            # the checkpoint's acks drive the commits only under AT_LEAST_ONCE bookkeeping;
            # commits of fetched offsets would run ahead of the checkpoint and a take-over skip
            log.warning("%s: exactly-once: processing_guarantee %s is read as AT_LEAST_ONCE",
                        self.name, self.config.processing_guarantee.name)
            self.config = copy.copy(self.config)
            self.config.processing_guarantee = ProcessingGuarantee.AT_LEAST_ONCE
        cfg = self.config
        threaded = bool(conf.get("squall.task.threaded"))
        poll_timeout_s = cfg.poll_timeout_ms / 1000.0 if threaded else 0.0
        # the new owner's wait for a release: acks come within the message timeout
        # (at-least-once) or at a checkpoint commit (exactly-once), and a broker that was down
        # gets the release at the next commit period at the latest
        handover_s = max(float(conf.get("topology.message.timeout.secs") or 30),
                         cfg.offset_commit_period_ms / 1000.0) \
            + 2 * cfg.partition_refresh_period_ms / 1000.0
        if self.exactly_once:
            handover_s += float(conf.get("topology.state.checkpoint.interval.ms") or 1000) / 1000.0
        self.handover_s = handover_s
        self.acked = False  # acks arrived since next_tuple last looked
        self.book = Book()
        self.health = Health(self.name, cfg.bootstrap_servers, collector)
        self.inflight = InFlight(cfg, self.book, collector, self.name, context)
        self.commits = Commits(self.name, context, self.book, self.health)
        self.commit_timer = Timer(TIMER_DELAY_MS, cfg.offset_commit_period_ms)
        self.refresh_timer = Timer(TIMER_DELAY_MS, cfg.partition_refresh_period_ms)
        self.metrics_timer = Timer(0, cfg.metrics_time_bucket_size_in_secs * 1000)
        self.recommit_timer = Timer(cfg.offset_recommit_period_ms, cfg.offset_recommit_period_ms)
        self.timers_due = clock.monotonic()  # when the earliest of them expires
        props = {"bootstrap.servers": cfg.bootstrap_servers, "group.id": cfg.group_id,
                 "enable.auto.commit": False, "enable.auto.offset.store": False,
                 "enable.partition.eof": False,
                 "auto.offset.reset": offset_reset(cfg, self.exactly_once), **cfg.consumer_props}
        consumer = ck.Consumer({**props, "error_cb": self.health.on_client_error,
                                "on_commit": self.commits.on_commit})
        owners = ck.Consumer({**props, "group.id": owners_group(cfg.group_id),
                              "on_commit": self._on_owner_commit})
        self.fetcher = Fetcher(consumer, cfg, self.book, self.health, self.commits, poll_timeout_s)
        if self.exactly_once:
            held_back = self.inflight.held_back
            self.fetcher.stuck = lambda tp: bool(held_back.get(tp))
        self.commits.bind(consumer, self.fetcher.serve)
        down: list[Any] = []
        lookup = ck.Consumer({**props, "error_cb": down.append})
        try:
            partitions = self._first_partitions(ck, lookup, down)
        except ck.KafkaException as e:
            for c in (lookup, consumer, owners):
                c.close()
            raise ConnectionError(f"{self.name}: the Kafka bootstrap servers {cfg.bootstrap_servers} "
                                  f"cannot be reached: {e}") from None
        missing = sorted(set(cfg.topics or ()) - {tp.topic for tp in partitions})
        if missing:
            for c in (lookup, consumer, owners):
                c.close()
            raise ValueError(f"{self.name}: unknown topic{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)} on {cfg.bootstrap_servers}")
        self.monitor = Monitor(lookup, ck.Consumer({**props, "group.id": owners_group(cfg.group_id)}),
                               cfg.subscribes)
        self.gauges = Gauges(context, self.book, self.health)
        self.gauges.register()
        self.handover = Handover(name=self.name, context=context, config=cfg, owners=owners,
                                 handover_s=handover_s, book=self.book, health=self.health,
                                 commits=self.commits, fetcher=self.fetcher, inflight=self.inflight,
                                 gauges=self.gauges, monitor=self.monitor,
                                 offset_reset=str(props["auto.offset.reset"]))
        self.handover.reassign(partitions)

    def _on_owner_commit(self, error: Any, partitions: list) -> None:
        self.handover.on_owner_commit(error, partitions)

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
        sync = self.health.down is None
        try:
            self.handover.commit_acked(sync=sync)
            self.handover.close_out()
            self.handover.release(set(self.book.managers) | self.book.assigned, final=True)
        finally:
            self.monitor.close()
            self.fetcher.consumer.close()
            self.handover.owners.close()

    def deactivate(self) -> None:
        """Commit what is acked (Storm's ``deactivate``)."""
        self.handover.commit_acked()

    # ---- next_tuple ------------------------------------------------------------------------

    def next_tuple(self) -> None:
        """Take the monitor's answers, run due timers, then emit one retry or letter, or records.

        Records fetched and at hand go out together, up to ``max_records_per_next_tuple``: the
        task's cost per call is paid once for them.
        """
        if self.monitor.results:
            while True:
                answer = self.monitor.take()
                if answer is None:
                    break
                self._on_answer(*answer)
        if self.acked:
            self.acked = False
            self._after_acks()
        if clock.monotonic() >= self.timers_due:
            self._run_timers()
        if self.handover.busy:
            self.handover.pump()
        inflight = self.inflight
        if inflight.emit_due():
            return
        fetcher = self.fetcher
        fetcher.begin()
        next_record, upto, emit = fetcher.next_record, self.book.upto, inflight.emit
        left = self.config.max_records_per_next_tuple
        while left:
            record = next_record()
            if record is None:
                return
            topic, partition, offset = record.topic(), record.partition(), record.offset()
            upto[(topic, partition)] = offset + 1
            if emit(record, (topic, partition, offset)):
                left -= 1

    def _after_acks(self) -> None:
        # a drained partition is released at once (its new owner waits for that); in
        # exactly-once mode acks come at a checkpoint's COMMIT: the group offset follows it
        if self.handover.draining:
            self.handover.release_drained()
        if self.exactly_once:
            self.commits.commit_acked(sync=False)

    def _run_timers(self) -> None:
        if self.refresh_timer.is_expired_reset_on_true():
            self.monitor.request("partitions")
        if self.metrics_timer.is_expired_reset_on_true() and self.book.assigned:
            self.monitor.request("watermarks", sorted(self.book.assigned))
        if self.commit_timer.is_expired_reset_on_true():
            if self.inflight.at_least_once:
                self.handover.commit_acked()
            elif self.config.processing_guarantee is ProcessingGuarantee.NO_GUARANTEE:
                self.commits.commit_positions(sync=False)
        if self.recommit_timer.is_expired_reset_on_true() and not self.handover.recommit():
            self.recommit_timer.expire_now()
        self.timers_due = min(t.next_due for t in (self.refresh_timer, self.metrics_timer, self.commit_timer,
                                                   self.recommit_timer))

    def _on_answer(self, kind: str, payload: Any, error: str | None) -> None:
        if error is not None:
            self.health.unreachable(error)
            return
        self.health.up()
        if kind == "partitions":
            self.handover.reassign(payload)
        elif kind == "committed":
            self.handover.take_over(payload)
        elif kind == "watermarks":
            self.book.watermarks.update(payload)
        elif kind == "owner_marks":
            self.handover.release_orphans(payload)

    # ---- positions (a seekable spout) ------------------------------------------------------

    def position(self) -> list[list]:
        """``[topic, partition, next offset to emit]`` per partition this task reads or finishes.

        A partition taken but not yet read (waiting for its previous owner) is listed at the
        offset a seek gave it, if any. A record read but not out of the spout (its translator
        or its emit raised, and it waits for a retry or its dead letter) keeps its partition's
        position at its offset: a checkpoint never counts it as done.
        """
        book = self.book
        where = {tp: book.upto[tp] for tp in book.assigned | self.handover.draining if tp in book.upto}
        if self.inflight.held_back:
            for tp, upto in where.items():
                low = self.inflight.lowest_held_back(tp)
                if low is not None and low < upto:
                    where[tp] = low
        where.update({tp: o for tp, o in book.sought.items() if tp not in where})
        return [[tp[0], tp[1], o] for tp, o in sorted(where.items())]

    @staticmethod
    def merge_positions(positions: list, index: int, tasks: int) -> list[list]:
        """Task ``index`` of ``tasks`` (the spout's task count changed): every listed partition.

        Which task reads a partition depends on the whole partition list, which the old
        positions do not hold (a partition never read is in none), so every new task gets
        every entry and its ``seek`` keeps those of the partitions it takes (the others it
        ignores, or releases at the listed offset if its owner marks still name it). A
        partition listed twice (an old owner handing it over, and its new owner waiting
        for it) takes the higher offset: neither task would have read below it.
        """
        merged: dict[tuple[str, int], int] = {}
        for old in positions:
            for topic, partition, offset in old or ():
                tp = (str(topic), int(partition))
                merged[tp] = max(int(offset), merged.get(tp, int(offset)))
        return [[t, p, o] for (t, p), o in sorted(merged.items())]

    def seek(self, position: list[list]) -> None:
        """Read each partition again from the offset ``position`` gives (``position()``'s form).

        ``position`` is a committed checkpoint's: what was emitted below its offsets is done
        (committed as if acked), what was emitted at or past them is forgotten without
        ``fail`` and read again. A partition this task reads that ``position`` does not list
        was taken after it: it is read again from where this task took it over. A listed
        partition this task is waiting to take is read from the given offset once taken;
        other listed partitions belong to other tasks and are ignored. An offset the broker
        no longer holds raises ``SeekOutOfRangeError``.
        """
        offsets = self._seek_offsets(position)
        book = self.book
        book.sought = {tp: o for tp, o in offsets.items() if tp in self.handover.waiting}
        self.handover.ends_to_reread = set(book.sought)
        ours = book.assigned | self.handover.draining
        # listed, yet neither read nor waited for here: a partition this task was handing
        # over when it died. If the owner marks still name this task, it is released at the
        # listed offset (the checkpoint holds what came before), not left to its new owner's
        # fallback to the group offset, which lags the checkpoint
        orphans = {tp: o for tp, o in offsets.items() if tp not in ours and tp not in self.handover.waiting}
        if orphans:
            self.handover.orphans = orphans
            self.monitor.request("owner_marks", sorted(orphans))
        for tp in sorted(ours):
            offset = offsets.get(tp, book.started.get(tp, book.upto.get(tp, 0)))
            if tp in book.assigned:
                self._check_range(tp, offset)
                self.fetcher.seek(tp, offset)
            else:
                book.upto[tp] = offset
            self.inflight.rewind(tp, offset)
            manager = book.managers.get(tp)
            if manager is not None:
                book.managers[tp] = _rewound(manager, offset)

    def committed(self, position: list[list]) -> None:
        """A (re)started task's committed position: the group offsets catch up with it.

        The records below each listed offset are in a committed checkpoint, but the task
        that emitted them may have died before their ``ack`` (so before its commit): each
        listed partition this task reads, or waits to take, has its offset committed with
        the next commit of the partition, even when nothing new is acked by then.
        """
        offsets = self._seek_offsets(position)
        ours = self.book.assigned | set(self.handover.waiting)
        self.book.owed.update({tp: o for tp, o in offsets.items() if tp in ours})

    def _seek_offsets(self, position: Any) -> dict[TopicPartition, int]:
        try:
            return {TopicPartition(str(t), int(p)): int(o) for t, p, o in position}
        except (TypeError, ValueError):
            raise ValueError(f"{self.name}: cannot seek to {position!r}: not a list of "
                             f"[topic, partition, offset]") from None

    def _check_range(self, tp: TopicPartition, offset: int) -> None:
        """Refuse an offset out of the partition's last known range, without a broker call.

        The watermarks are those read at the take-over or the last metrics period (the
        monitor reads them again now): the end only grows, so what this task fetched counts
        as held; a start that moved since is caught at the fetch (``auto.offset.reset``
        ``error`` under exactly-once, reported).
        """
        self.monitor.request("watermarks", sorted(self.book.assigned))
        known = self.book.watermarks.get(tp)
        if known is None:
            return
        lo, hi = known
        hi = max(hi, self.book.fetched.get(tp, hi), self.book.upto.get(tp, hi))
        check_in_range(self.name, tp, offset, lo, hi)

    # ---- ack / fail / metrics --------------------------------------------------------------

    def ack(self, msg_id: Any) -> None:
        """Its tree completed: the offset may now be committed."""
        self.inflight.ack(msg_id)
        self.acked = True

    def fail(self, msg_id: Any) -> None:
        """Its tree failed: retry after the backoff, or give it up."""
        self.inflight.fail_with_reason(msg_id, Failure("failed"))

    def fail_with_reason(self, msg_id: Any, failure: Failure) -> None:
        """As ``fail``, with why and where (the runtime's call): the dead letter carries it."""
        self.inflight.fail_with_reason(msg_id, failure)

    def offsets(self, tp: TopicPartition) -> dict[str, int | None]:
        """earliest, latest, latest_emitted, latest_committed and lag of one partition."""
        return self.gauges.offsets(tp)

    def total_lag(self) -> int:
        """The lag summed over this task's partitions (Storm's ``totalSpoutLag``)."""
        return self.gauges.total_lag()


def offset_reset(config: KafkaSpoutConfig, exactly_once: bool) -> str:
    """The consumer's ``auto.offset.reset`` when an offset is out of range: never a silent skip.

    ``error`` in exactly-once mode (the checkpoint would commit the jump), ``earliest`` for
    the EARLIEST-like strategies, ``latest`` for the others; ``consumer_props`` overrides it.
    """
    if exactly_once:
        return "error"
    if config.first_poll_offset_strategy in (FirstPollOffsetStrategy.EARLIEST,
                                             FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST):
        return "earliest"
    return "latest"


def _rewound(manager: OffsetManager, offset: int) -> OffsetManager:
    """``manager`` without what was emitted or acked at or past ``offset``.

    A seek forward (a restart seeking past the committed offset) leaves a gap of offsets
    never emitted here, which the commit skips as it skips compacted offsets.
    """
    fresh = OffsetManager(manager.tp, min(offset, manager.committed_offset))
    fresh.committed = manager.committed
    for o in manager._emitted:
        if o < offset:
            fresh.add_to_emit_msgs(o)
            if manager.contains(o):
                fresh.add_to_ack_msgs(o)
    return fresh
