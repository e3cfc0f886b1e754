"""Redis Streams: a spout reading through a consumer group, a bolt appending to a stream.

``RedisStreamSpout`` reads with ``XREADGROUP`` as consumer ``<component>-<task index>`` (the
same name after a restart), so an entry delivered but never acked stays in the group's
pending list: on open the spout first replays its own pending entries, and every
``claim_interval_secs`` it takes over entries idle for ``claim_idle_secs`` in other consumers'
lists (``XAUTOCLAIM``: a consumer whose worker died, or that a rebalance removed). An entry is
``XACK``-ed only when its tuple tree is acked or its dead letter is: at-least-once, with
duplicates only for trees that completed but whose ``XACK`` was lost with the worker.

Seeking (exactly-once): ``position()`` is the id of the last entry this task emitted (its
consumer receives entries in id order); ``seek(id)`` acks this consumer's pending entries up
to the id (a committed checkpoint covers them) and reads its pending entries after it again,
then new ones. With ``topology.guarantee: exactly_once`` the spout claims no other consumer's
entries: a claimed entry may already be counted in a checkpoint by the task that read it.
A pending entry after the position that was trimmed from the stream is refused with
``SourceTrimmedError`` rather than skipped. When the spout's task count changes, the old
positions are merged (``merge_positions``): consumer ``<component>-<k>`` stays with task
``k``, and a consumer whose task is gone goes to task ``k % tasks``, which reads its pending
entries after its position again (as that consumer) and acks those before it; a position
that covers such consumers is ``{"<k>": id, ...}`` (the task's own index included).

``RedisStreamBolt`` appends each tuple as one entry (``XADD``, field -> value) and acks the
tuple only after Redis answered; a failed write fails the tuple, so the spout replays it.
In a stateful topology its entries follow the checkpoints (``squall.connectors.redis_txn``):
staged per transaction, appended to the stream at commit, discarded on rollback.

Needs the ``redis`` package (``pip install 'squall[redis]'``), imported when this module is.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

import redis as redis_py
from redis.backoff import NoBackoff
from redis.retry import Retry

from squall.api.components import Bolt, OutputFieldsDeclarer, SeekableSpout
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.connectors.redis_txn import StreamTxnStaging
from squall.connectors.reliable import ReliableSpout
from squall.runtime import clock

log = logging.getLogger("squall.connectors.redis")

_UNAVAILABLE = (redis_py.ConnectionError, redis_py.TimeoutError)
RETRY_SECS = 0.5  # after a failed call, wait this long (runtime clock) before the next
LAG_SECS = 1.0  # how often the lag gauge is measured (runtime clock)


def connect(host: str, port: int, db: int, password: str | None, timeout: float,
            decode: bool = True) -> Any:
    """A client with short timeouts, so a dead server costs a task at most ``timeout``.

    RESP2 replies (lists), whatever the library's default protocol; typed ``Any`` because
    the library's reply types cover every protocol at once.
    """
    return redis_py.Redis(host=host, port=int(port), db=int(db), password=password,
                          socket_timeout=timeout, socket_connect_timeout=timeout,
                          decode_responses=decode, protocol=2,
                          # one immediate retry gets past a pooled connection that died with
                          # a restarted server; the library's default (seconds of backoff)
                          # would hold the task's thread, and replay covers longer outages
                          retry=Retry(NoBackoff(), 1))


class SourceTrimmedError(RuntimeError):
    """An entry to read again after a seek was trimmed from the stream."""


def entry_key(entry_id: str | bytes) -> tuple[int, int]:
    """An entry id (``"<ms>-<seq>"``) as numbers, ordered as Redis orders ids."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


class RedisStreamSpout(ReliableSpout, SeekableSpout):
    """Entries of a Redis stream as tuples; ``XACK`` once each tree completes.

    ``fields``: the entry fields that become the tuple, in order (a missing one is None);
    the msg id is the entry id. ``group`` is created if missing, from ``start_id`` ("0": the
    whole stream; "$": only entries added later). ``batch``: entries read per call.
    Values are ``str`` (``decode=False``: ``bytes``).
    """

    def __init__(self, stream: str, group: str, fields: Fields | Iterable[str], *,
                 host: str = "127.0.0.1", port: int = 6379, db: int = 0,
                 password: str | None = None, start_id: str = "0", batch: int = 100,
                 claim_idle_secs: float = 60.0, claim_interval_secs: float = 10.0,
                 consumer: str | None = None, decode: bool = True, timeout: float = 5.0) -> None:
        if not stream or not group:
            raise ValueError(f"RedisStreamSpout needs a stream and a group, got {stream!r}, {group!r}")
        self.stream, self.group = stream, group
        self.fields = fields if isinstance(fields, Fields) else Fields(*fields)
        if len(self.fields) == 0:
            raise ValueError(f"RedisStreamSpout({stream!r}): fields must name at least one entry field")
        self.host, self.port, self.db, self.password = host, port, db, password
        self.start_id, self.batch, self.consumer = start_id, int(batch), consumer
        self.claim_idle_secs, self.claim_interval_secs = claim_idle_secs, claim_interval_secs
        self.decode, self.timeout = decode, timeout

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The default stream has ``fields``."""
        declarer.declare(self.fields)

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Connect, create the group if needed, and start with this consumer's pending entries."""
        self.name = self.consumer or f"{context.component_id}-{context.get_this_task_index()}"
        self.client = connect(self.host, self.port, self.db, self.password, self.timeout, self.decode)
        self._buffer: deque[tuple[str, list]] = deque()
        self._acks: list[str] = []
        self._cursor: str | None = "0"  # own pending entries first (None: read new ones)
        self._claim_cursor = "0-0"
        # exactly-once: a claimed entry may be in another task's checkpoint already
        self._claims = conf.get("topology.guarantee") != "exactly_once"
        self._last: str = "0-0"  # the last entry emitted: position()
        self._sought: str | None = None  # replaying after seek(this): a trimmed entry is an error
        self._component = context.component_id
        self._index = context.get_this_task_index()
        # consumers of tasks a rescale removed, read by this task: index -> _Adopted
        self._adopted: dict[int, _Adopted] = {}
        self._origin: dict[str, int] = {}  # an adopted consumer's entry in flight -> its index
        self._next_claim = clock.monotonic()
        self._retry_at = 0.0
        self._group_ready = False
        self._down = False
        self.last_lag: int | None = None  # lag() as last measured, for the gauge
        self._next_lag = 0.0
        register = getattr(context, "register_gauge", None)
        if callable(register):  # a cheap read: measured on the task's thread, every LAG_SECS
            register("lag", lambda: self.last_lag)

    def next_message(self) -> tuple[Any, list] | None:
        """The next entry: replays of our pending list, claimed entries, then new ones."""
        if not self._buffer:
            now = clock.monotonic()
            if now < self._retry_at:
                return None
            try:
                self._flush_acks()
                if now >= self._next_lag:
                    self._next_lag = now + LAG_SECS
                    self.last_lag = self.lag()
                self._fill(now)
            except _UNAVAILABLE as e:
                self._unavailable(e, now)
                return None
            except redis_py.ResponseError as e:
                if "NOGROUP" not in str(e):
                    raise
                # the stream or group went away (deleted, or a server restarted without
                # them): create it again and start over with this consumer's pending list
                log.warning("%s: %s; creating group %r again", self.name, e, self.group)
                self._group_ready, self._cursor = False, "0"
                self._unavailable(e, now)
                return None
            if self._down:
                log.info("%s: Redis at %s:%s answers again", self.name, self.host, self.port)
                self._down = False
        if not self._buffer:
            return None
        entry = self._buffer.popleft()
        origin = self._origin.get(entry[0]) if self._origin else None
        if origin is None:
            self._last = _text(entry[0])
        else:
            self._adopted[origin].last = _text(entry[0])
        return entry

    # ---- seeking ---------------------------------------------------------------------------

    def position(self) -> str | dict[str, str]:
        """The id of the last entry this task emitted ("0-0": none yet).

        With consumers adopted from tasks a rescale removed: ``{"<index>": id}`` per
        consumer, this task's own included.
        """
        if not self._adopted:
            return self._last
        where = {str(k): a.last for k, a in sorted(self._adopted.items())}
        where[str(self._index)] = self._last
        return where

    @staticmethod
    def merge_positions(positions: list, index: int, tasks: int) -> str | dict[str, str]:
        """Task ``index`` of ``tasks``: its own consumer's entry, and those of consumers left over.

        Consumer ``k`` (``<component>-<k>``) stays with task ``k``; one whose task is gone
        goes to task ``k % tasks``. Every old task's consumer is kept (at "0-0" when its
        task never committed), since its pending entries are read again from its position.
        """
        ids: dict[int, str] = {}
        for old, where in enumerate(positions):
            ids.setdefault(old, "0-0")
            if isinstance(where, dict):
                ids.update({int(k): str(v) for k, v in where.items()})
            elif where is not None:
                ids[old] = str(where)
        mine = {k: v for k, v in ids.items() if (k if k < tasks else k % tasks) == index}
        own = mine.pop(index, "0-0")
        if not mine:
            return own
        return {str(k): v for k, v in sorted({**mine, index: own}.items())}

    def seek(self, position: str | dict[str, str]) -> None:
        """Read this consumer's pending entries after ``position`` again, then new ones.

        A ``{"<index>": id}`` position also reads the pending entries of the other consumers
        it lists (``merge_positions``) after their ids, as those consumers.
        """
        who = f"RedisStreamSpout {self.name!r}"
        own, listed = self._parse(position)
        keys = {k: entry_key(v) for k, v in listed.items()}
        key = entry_key(own)
        adopted = {k: _Adopted(f"{self._component}-{k}", v) for k, v in listed.items()}
        try:
            if not self._group_ready:  # a first seek comes before any read
                self._create_group()
            self._check_kept(own, self.name)
            self._ack_pending_upto(own, self.name)
            for a in adopted.values():
                self._check_kept(a.last, a.consumer)
                self._ack_pending_upto(a.last, a.consumer)
        except (redis_py.RedisError, OSError) as e:
            raise ConnectionError(f"{who}: cannot seek to {position}: {type(e).__name__}: {e}") from None
        origin = self._origin

        def before(m: Any) -> bool:
            k = origin.get(m)
            return entry_key(m) <= (key if k is None or k not in keys else keys[k])

        self.rewind(before)
        self._buffer.clear()
        self._origin = {}
        self._adopted = adopted
        self._cursor = self._sought = self._last = str(own)

    def _parse(self, position: Any) -> tuple[str, dict[int, str]]:
        """The own consumer's id, and the other consumers' ids (by task index), of ``position``."""
        who = f"RedisStreamSpout {self.name!r}"
        try:
            if isinstance(position, dict):
                listed = {int(k): str(v) for k, v in position.items()}
                own = listed.pop(self._index, "0-0")
            else:
                own, listed = position, {}
            for v in (own, *listed.values()):
                entry_key(v)
        except (TypeError, ValueError, AttributeError):
            raise ValueError(f"{who}: cannot seek to {position!r}: not a stream entry id") from None
        return str(own), listed

    def committed(self, position: str | dict[str, str]) -> None:
        """A (re)started task's committed position: ``XACK`` the pending entries up to it.

        The entries up to the position are in a committed checkpoint, but the task that
        emitted them may have died before their ``ack``: this consumer's (and the adopted
        consumers') pending entries up to their ids are acked now.
        """
        own, listed = self._parse(position)
        if not self._group_ready:
            self._create_group()
        self._ack_pending_upto(own, self.name)
        for k, v in listed.items():
            self._ack_pending_upto(v, f"{self._component}-{k}")

    def _check_kept(self, position: str, consumer: str) -> None:
        # the first of the consumer's pending entries after the position must still be in the
        # stream (trimming removes from the head, so the later ones are then there too)
        after = self.client.xpending_range(self.stream, self.group, min=f"({position}", max="+",
                                           count=1, consumername=consumer)
        if after and not self.client.xrange(self.stream, after[0]["message_id"],
                                            after[0]["message_id"], count=1):
            raise SourceTrimmedError(
                f"RedisStreamSpout {consumer!r}: cannot seek to {position}: entry "
                f"{_text(after[0]['message_id'])} after it was trimmed from stream {self.stream!r}")

    def _ack_pending_upto(self, position: str, consumer: str) -> None:
        # pending up to the position: a committed checkpoint covers them, their acks may be lost
        while True:
            upto = self.client.xpending_range(self.stream, self.group, min="-", max=position,
                                              count=self.batch, consumername=consumer)
            if not upto:
                return
            self.client.xack(self.stream, self.group, *[e["message_id"] for e in upto])

    def on_done(self, msg_id: Any) -> None:
        """Acked or dead-lettered: ``XACK`` it (batched with the next read)."""
        if self._origin:
            self._origin.pop(msg_id, None)
        self._acks.append(msg_id)
        if len(self._acks) >= self.batch:
            try:
                self._flush_acks()
            except _UNAVAILABLE as e:
                self._unavailable(e, clock.monotonic())

    def deactivate(self) -> None:
        """Send the acks held so far."""
        self._try_flush()

    def close(self) -> None:
        """Send the acks held so far and disconnect."""
        self._try_flush()
        self.client.close()

    def lag(self) -> int:
        """Entries of the group not yet acked: pending in any consumer, or not yet read."""
        for info in self.client.xinfo_groups(self.stream):
            if info["name"] in (self.group, self.group.encode()):
                return int(info.get("pending") or 0) + int(info.get("lag") or 0)
        return 0

    # ---- reading ---------------------------------------------------------------------------

    def _fill(self, now: float) -> None:
        if not self._group_ready:
            self._create_group()
        if self._cursor is not None:
            self._read_pending()
            if self._buffer:
                return
        for k, a in self._adopted.items():
            if a.cursor is not None:
                self._read_adopted(k, a)
                if self._buffer:
                    return
        if self._claims and now >= self._next_claim:
            self._next_claim = now + self.claim_interval_secs
            self._claim()
            if self._buffer:
                return
        reply = self.client.xreadgroup(self.group, self.name, {self.stream: ">"}, count=self.batch)
        self._take(reply[0][1] if reply else [])

    def _create_group(self) -> None:
        try:
            self.client.xgroup_create(self.stream, self.group, id=self.start_id, mkstream=True)
        except redis_py.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise
        self._group_ready = True

    def _read_pending(self) -> None:
        # XREADGROUP from an id below ">" replays this consumer's own unacked entries
        assert self._cursor is not None
        reply = self.client.xreadgroup(self.group, self.name, {self.stream: self._cursor},
                                       count=self.batch)
        entries = reply[0][1] if reply else []
        if not entries:
            self._cursor = self._sought = None
            return
        self._take(entries, pending=True)

    def _read_adopted(self, index: int, adopted: _Adopted) -> None:
        # the pending entries of a consumer whose task a rescale removed, read as that consumer
        assert adopted.cursor is not None
        reply = self.client.xreadgroup(self.group, adopted.consumer, {self.stream: adopted.cursor},
                                       count=self.batch)
        entries = reply[0][1] if reply else []
        if not entries:
            adopted.cursor = adopted.sought = None
            return
        for entry_id, data in entries:
            if not data:  # trimmed or deleted while pending
                if adopted.sought is not None:
                    raise SourceTrimmedError(
                        f"RedisStreamSpout {adopted.consumer!r}: cannot seek to {adopted.sought}: "
                        f"entry {_text(entry_id)} after it was trimmed from stream {self.stream!r}")
                self._acks.append(entry_id)
            else:
                self._origin[entry_id] = index
                self._buffer.append((entry_id, [data.get(f) for f in self.fields]))
            adopted.cursor = entry_id

    def _claim(self) -> None:
        idle_ms = int(self.claim_idle_secs * 1000)
        reply = self.client.xautoclaim(self.stream, self.group, self.name, idle_ms,
                                       start_id=self._claim_cursor, count=self.batch)
        self._claim_cursor = reply[0]
        if len(reply) > 2 and reply[2]:  # deleted from the stream while pending: nothing to replay
            self.client.xack(self.stream, self.group, *reply[2])
        self._take(reply[1])

    def _take(self, entries: list, pending: bool = False) -> None:
        # ``pending``: a replay of this consumer's own entries, whose cursor moves past each
        # entry only once it is taken: a refusal leaves it before the missing entry, so the
        # next read refuses again rather than skipping the rest of the batch
        for entry_id, data in entries:
            if not data:  # deleted or trimmed while pending (redis-py gives {} or None; XADD needs a field)
                if self._sought is not None:
                    raise SourceTrimmedError(
                        f"RedisStreamSpout {self.name!r}: cannot seek to {self._sought}: entry "
                        f"{_text(entry_id)} after it was trimmed from stream {self.stream!r}")
                self._acks.append(entry_id)
            else:
                self._buffer.append((entry_id, [data.get(f) for f in self.fields]))
            if pending:
                self._cursor = entry_id

    # ---- acks and outages ------------------------------------------------------------------

    def _flush_acks(self) -> None:
        if self._acks:
            acks = self._acks
            self.client.xack(self.stream, self.group, *acks)
            del acks[:]  # only once Redis has them: a failed XACK is sent again

    def _try_flush(self) -> None:
        try:
            self._flush_acks()
        except _UNAVAILABLE as e:
            log.warning("%s: %d acks not sent (%s); their entries will be replayed",
                        self.name, len(self._acks), e)

    def _unavailable(self, error: Exception, now: float) -> None:
        self._retry_at = now + RETRY_SECS
        if not self._down:
            self._down = True
            log.warning("%s: Redis at %s:%s unavailable (%s); retrying every %.1f s",
                        self.name, self.host, self.port, error, RETRY_SECS)


class _Adopted:
    """A consumer whose task a rescale removed, read by this task (``merge_positions``)."""

    def __init__(self, consumer: str, position: str) -> None:
        self.consumer = consumer
        self.last = position  # the last of its entries emitted (its part of position())
        self.cursor: str | None = position  # reading its pending entries after this id
        self.sought: str | None = position


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def encode_value(value: Any) -> Any:
    """A tuple value as a Redis field value: str, bytes, int and float as they are, else JSON."""
    if isinstance(value, (str, bytes, int, float)) and not isinstance(value, bool):
        return value
    return json.dumps(value, default=repr)


class RedisStreamBolt(Bolt):
    """Appends each input tuple to ``stream`` (``XADD``, field -> value), then acks it.

    ``fields``: which of the tuple's fields to write (default: all). Values that are not
    str, bytes, int or float are written as JSON text (a dead letter's ``values`` list, None).
    ``maxlen`` caps the stream (approximately, as ``XADD MAXLEN ~``). A write that fails
    (Redis down) fails the tuple, so its spout replays it: at-least-once. In a stateful
    topology the entries are staged and appended to the stream at checkpoint commits.
    """

    # The runtime runs this bolt as a stateful bolt when its topology has checkpoints.
    follows_checkpoints = True

    def __init__(self, stream: str, *, host: str = "127.0.0.1", port: int = 6379, db: int = 0,
                 password: str | None = None, fields: Iterable[str] | None = None,
                 maxlen: int | None = None, timeout: float = 5.0) -> None:
        if not stream:
            raise ValueError("RedisStreamBolt needs a stream name")
        self.stream = stream
        self.host, self.port, self.db, self.password = host, port, db, password
        self.fields = list(fields) if fields is not None else None
        self.maxlen, self.timeout = maxlen, timeout

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Connect (lazily: the first write opens the connection)."""
        self.collector = collector
        self.client = connect(self.host, self.port, self.db, self.password, self.timeout, False)
        self.owner = f"{context.component_id}-{context.get_this_task_index()}"
        self.staging: StreamTxnStaging | None = None  # set by init_state: writes follow checkpoints

    def execute(self, tup: Tuple) -> None:
        """Write the tuple; ack it once Redis has it, fail it if the write failed."""
        if tup.is_tick():
            return
        names = self.fields if self.fields is not None else list(tup.fields)
        entry = {name: encode_value(tup[name]) for name in names}
        try:
            if self.staging is not None:
                self.staging.add(entry)
            else:
                self.client.xadd(self.stream, entry, maxlen=self.maxlen, approximate=True)
        except _UNAVAILABLE as e:
            self.collector.report_error(e)
            self.collector.fail(tup)
            return
        self.collector.ack(tup)

    # ---- checkpoints (a stateful topology) -----------------------------------------------------

    def init_state(self, state: Any) -> None:
        """Entries follow checkpoints from now on; finish or discard the transactions left."""
        self.state = state
        self.staging = StreamTxnStaging(self.client, self.stream, self.owner, self.maxlen)
        self._recover("starting")

    def _recover(self, why: str) -> None:
        assert self.staging is not None
        committed = self.state.committed_txid()
        moved, dropped = self.staging.recover(committed)
        if moved or dropped:
            log.info("RedisStreamBolt %s (%s): appended %d entries of transactions up to %s, "
                     "discarded transactions %s", self.owner, why, moved, committed, dropped)

    def pre_prepare(self, txid: int) -> None:
        """Seal the entries written since the last prepare as transaction ``txid``."""
        if self.staging is not None:
            self.staging.seal(txid)

    def pre_commit(self, txid: int) -> None:
        """Append transaction ``txid`` (and any earlier one left) to the stream."""
        if self.staging is not None:
            self.staging.publish(txid)

    def pre_rollback(self) -> None:
        """Discard the entries staged since the last commit (their tuples are replayed)."""
        if self.staging is not None:
            self._recover("rollback")

    def cleanup(self) -> None:
        """Disconnect."""
        self.client.close()
