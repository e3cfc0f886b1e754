"""The worker's data path: the ``TaskHost`` of the tasks on its loop, and the transport shell.

A tuple a task emits reaches ``deliver``: a task of this worker gets it in its queue at once
(an acker applies it in place); a task of another worker gets it in the open batch of its
(source, target, stream), and each peer's batches leave as one frame when that peer's frame is
full, at a mid-round send, or at the round's end (``send``). Frames from peers arrive through
``receive``, which queues their tuples. Acks for ackers in other workers are combined per root
until the next send (``buffer_ack``).

The send buffer (``topology.executor.send.buffer.size`` tuples, as frames of
``squall.transfer.batch.size``: ``send_bound``) bounds the frames waiting for one peer
(``_unsent``, behind the transport's own bounded queue). At the bound the worker is ``held``:
its flush leaves the batches for that peer open, the round stops its bolts between slices
(``round.Round``), its spouts stop, and it tells every peer (a pressure frame) so that
their spouts stop too: what is in flight drains and no new tree starts until the peer takes
frames again. Acker messages are applied as frames arrive, and a held worker takes frames
even with its queues full (``Round.room``), so two workers held by each other never wait
forever.

Nothing here decides when: the round (``round.Round``) calls ``send`` and ``receive``, and the
transport (``transport.Transport``: ZeroMQ between processes, a queue in one) carries frames.
"""

from __future__ import annotations

import logging
from array import array
from collections import deque
from collections.abc import Callable
from typing import Any

from squall.api.fields import Fields
from squall.api.tuple import Tuple, new_tuple, new_tuple1
from squall.runtime.acker import AckBuffer
from squall.runtime.host import Task, TaskHost
from squall.runtime.ids import u64_array, u64_bytes
from squall.runtime.plan import ACK_ACK, ACK_ACKS, SYSTEM_STREAM_FIELDS, TaskPlan
from squall.runtime.serialization import (
    CorruptFrameError,
    Encoder,
    SerializationError,
    TupleTooLargeError,
    messages_of,
)
from squall.runtime.tasks import AckerTask, SpoutTask
from squall.runtime.transport import Transport

log = logging.getLogger("squall.worker")
FRAMES_PER_ROUND = 64
LARGE_TUPLE_BYTES = 65536  # above this a tuple's size is checked and it ends its frame
DEFAULT_MAX_TUPLE_BYTES = 16 * 1024 * 1024
# a pressure frame: one batch for no task, from the held worker, saying on (1) or off (0)
PRESSURE_TARGET = -1
PRESSURE_STREAM = "__pressure"


def send_bound(conf: dict) -> int:
    """Frames the send buffer holds per peer (the transports' queue to it is as long).

    ``topology.executor.send.buffer.size`` tuples in frames of ``squall.transfer.batch.size``,
    at least 4.
    """
    tuples = int(conf.get("topology.executor.send.buffer.size") or 32768)
    return max(4, tuples // int(conf.get("squall.transfer.batch.size") or 512))


class _Peer:
    """Another worker, as this one sends to it: the batches of the frame being filled."""

    __slots__ = ("index", "batches", "count")

    def __init__(self, index: int) -> None:
        self.index = index
        self.batches: list[_Batch] = []
        self.count = 0  # tuples in those batches


NO_IDS = array("Q")
_DEQUE_APPEND: Any = deque.append  # a C global, compiled (transfer.pxd)


class _Batch:
    """Tuples of one source task for one task of another worker on one stream, in order.

    A batch stays open for more of the same until its peer's frame is flushed or the
    source sends that target a tuple on another stream (which opens a new batch behind it:
    what one task sends another stays in order, checkpoint barriers behind their data).

    Once a tuple of the batch is tracked, ``ids`` (a C array of 64-bit ints, compiled) holds
    two per tuple: its root and edge for a tuple of one tree, ``0, 0`` for the others,
    whose entry in ``others`` says what they are (None: untracked; ``{root: edge, ...}``:
    several trees). On the wire the ids are one bytes string, 16 bytes per tuple.
    """

    __slots__ = ("target", "src", "stream", "values", "idbuf", "ids", "nids", "others",
                 "tracked", "peer")

    def __init__(self, target: int, src: Task, stream: str) -> None:
        self.target = target
        self.src = src
        self.stream = stream
        self.values: list[list] = []
        self.idbuf = NO_IDS  # the array ``ids`` views (its owner)
        self.ids = NO_IDS
        self.nids = 0  # entries of ``ids`` in use
        self.others: dict[int, Any] | None = None
        self.tracked = False
        self.peer: _Peer | None = None

    def _room(self, need: int) -> None:
        """Make ``ids`` hold at least ``need`` entries (doubling; the new ones are 0)."""
        size = len(self.idbuf)
        if need <= size:
            return
        size = max(32, size * 2, need)
        buf = array("Q", [0]) * size
        buf[:self.nids] = self.idbuf[:self.nids]
        self.idbuf = buf
        self.ids = buf

    def _track_from(self, index: int) -> None:
        """The first tracked tuple is number ``index``: ids for the untracked ones before it."""
        self.tracked = True
        self._room(2 * index + 2)
        self.nids = 2 * index
        if index:
            self.others = dict.fromkeys(range(index))

    def add1(self, index: int, root: int, edge: int) -> None:
        """Tuple ``index`` (just appended) belongs to one tree."""
        if not self.tracked:
            self._track_from(index)
        n = self.nids
        if n + 2 > len(self.idbuf):
            self._room(n + 2)
        self.ids[n] = root
        self.ids[n + 1] = edge
        self.nids = n + 2

    def add_other(self, index: int, ids: dict[int, int] | None) -> None:
        """Tuple ``index`` (just appended) is untracked (None) or of several trees."""
        if not self.tracked:
            if ids is None:
                return  # nothing tracked yet: nothing to say
            self._track_from(index)
        self.add1(index, 0, 0)
        if self.others is None:
            self.others = {}
        self.others[index] = ids

    def wire_ids(self) -> bytes | None:
        """The ids as sent: little-endian 64-bit ints, or None when no tuple is tracked."""
        if not self.tracked:
            return None
        return u64_bytes(self.idbuf, self.nids)


PLAIN_CHARS = LARGE_TUPLE_BYTES // 4  # str or bytes this long are at most LARGE bytes packed
# the two marks as C constants (transfer.pxd), so a comparison makes no Python int per tuple
_PLAIN_CHARS = PLAIN_CHARS
_LARGE = LARGE_TUPLE_BYTES


def _plain(values: list) -> bool:
    """True when ``values`` surely pack (alone or through pickle) to under ``LARGE_TUPLE_BYTES``."""
    size = 0
    for v in values:
        t = type(v)
        if t is str or t is bytes:
            size += len(v)
        elif not (t is int or t is float or v is None or t is bool):
            return False
    return size <= _PLAIN_CHARS

class Transfer(TaskHost):
    """The data path of worker ``index``: local queues, batches and frames to and from peers.

    Runs on the worker's loop thread only (tasks off it reach it through a ``DeferredHost``).
    """

    def __init__(self, *, plan: TaskPlan, index: int, transport: Transport, conf: dict,
                 clock: Callable[[], float], errors: Any,
                 tap: Callable[[str, str, list, int], None] | None = None) -> None:
        super().__init__(plan, clock, errors, tap)
        self.index = index
        self.transport = transport
        self.tasks: dict[int, Task] = {}
        self._task_worker = plan.task_worker()
        self._encoder = Encoder()
        # peer worker -> its batches since the last flush (None for this worker)
        self._peers: list[_Peer | None] = [None] * plan.num_workers
        self._slots = max(plan.task_component, default=0) + 1  # task ids index Task._open
        self._unsent: dict[int, deque[bytes]] = {}
        self._acks: dict[int, AckBuffer] = {}  # remote acker -> root -> XOR this round
        self._acks_due = False
        self._ack_src: Task | None = None
        self._batch = int(conf.get("squall.transfer.batch.size") or 512)
        self._max_tuple = int(conf.get("squall.max.tuple.bytes") or DEFAULT_MAX_TUPLE_BYTES)
        self.send_bound = send_bound(conf)
        # some peer has ``send_bound`` frames waiting: the round holds the bolts, the spouts stop
        self.held = False
        self._announced = False  # what the peers were last told of ``held``
        self._pressure: set[int] = set()  # peers that said they are held: the spouts stop
        self.unsent_peak = 0  # most frames waiting for one peer at once
        # task id -> its queue's bound ``append`` for the queued tasks here (None for other
        # workers' tasks and inline ackers): a local delivery is a list index and a C call,
        # not a dict lookup and a method lookup (set by ``wire``; tasks never change after)
        self._appends: list[Any] = []
        self._inline: list[Any] = []  # task id -> the inline task (an acker) here, or None
        self._sources: dict[int, tuple[str, dict[str, Fields]]] = {}
        self.corrupt_frames = 0
        self.unsendable_frames = 0
        self.misrouted = 0
        # what crossed to other workers: frames, their bytes (packed, before the transport's
        # link header), tuples of the topology's streams and acker messages (``transfer_stats``)
        self.sent_frames = 0
        self.sent_bytes = 0
        self.sent_tuples = 0
        self.sent_acker = 0
        # a transport that sees frames lost on their way here (a sequence gap) says so
        if hasattr(transport, "on_loss"):
            transport.on_loss = self.lost_frames
        # a peer's process replaced: what its old process said of its pressure is void
        if hasattr(transport, "on_peer_reset"):
            transport.on_peer_reset = self._pressure.discard

    def lost_frames(self, reason: str, sources: Any = None) -> None:
        """Frames were dropped between live workers: tell the tasks whose tuples they carried.

        In exactly-once mode data tuples are untracked, so no acker timeout replays them:
        each task that may have lost input (``sources`` None: every task here) or output
        (``sources``: the senders) fails its next PREPARE (``frames_lost``), and the rollback
        that follows reads the records again. Tasks of at-least-once mode have no
        ``frames_lost``: their trees time out and replay.

        A lost frame may have been a peer's "off" for its send buffer: what the peers said
        is forgotten, so that the spouts never wait for a word that will not come (a peer
        still held keeps its own bolts waiting; its next "on" comes after its next "off").
        """
        self._pressure.clear()
        for task in (self.tasks.values() if sources is None else sources):
            mark = getattr(task, "frames_lost", None)
            if mark is not None:
                mark(reason)

    def wire(self, tasks: dict[int, Task], fields: dict[tuple[str, str], Fields]) -> None:
        """Index this worker's ``tasks`` for delivery; ``fields``: (component, stream) -> fields."""
        plan = self.plan
        self.tasks = tasks
        by_component: dict[str, dict[str, Fields]] = {}
        for (comp, stream), f in fields.items():
            by_component.setdefault(comp, {})[stream] = f
        # source task -> (its component, stream -> fields): one lookup per received tuple
        self._sources = {task: (comp, by_component.get(comp, {}))
                         for task, comp in plan.task_component.items()}
        slots = max(max(plan.task_component, default=0), max(tasks, default=0)) + 1
        self._appends = [None] * slots
        self._inline = [None] * slots
        for task_id, task in tasks.items():
            if task.inline:
                self._inline[task_id] = task
            else:
                self._appends[task_id] = task.inbox.append
        for peer in range(plan.num_workers):
            if peer != self.index:
                self._peers[peer] = _Peer(peer)
                self._unsent[peer] = deque()

    # ---- the data path (hot) -----------------------------------------------------------

    def deliver(self, target: int, src: Task, stream: str, values: list,
                ids: dict[int, int] | None) -> None:
        """Hand one tuple to task ``target``: its queue here, or a batch to its worker."""
        slot: int = target  # a C index, compiled
        if 0 <= slot < len(self._appends):
            append = self._appends[slot]
            if append is not None:  # a queued task of this worker
                append(new_tuple(values, src.out_fields[stream], src.component, stream,
                                 src.task_id, ids))
                return
            task = self._inline[slot]  # an acker here, or None: another worker's task
        else:
            task = self.tasks.get(target)
        if task is not None:
            if task.inline:
                acker: AckerTask = task  # type: ignore[assignment]  # typed when compiled
                acker.apply(stream, values)
                return
            task.inbox.append(
                new_tuple(values, src.out_fields[stream], src.component, stream, src.task_id, ids)
            )
            return
        size = 0 if _plain(values) else self._check_values(src, stream, values)
        batch = self._batch_to(target, src, stream)
        batch.values.append(values)
        batch.add_other(len(batch.values) - 1, ids or None)
        self._added(batch.peer, size)  # type: ignore[arg-type]  # set with the batch

    def deliver1(self, target: int, src: Task, stream: str, values: list, root: int,
                 edge: int) -> None:
        """``deliver`` for a tuple of one tree (the common case): its root and edge, no map."""
        slot: int = target  # a C index, compiled
        if 0 <= slot < len(self._appends):
            append = self._appends[slot]
            if append is not None:  # a queued task of this worker
                append(new_tuple1(values, src.fields_of(stream), src.component, stream,
                                  src.task_id, root, edge))
                return
            task = self._inline[slot]  # an acker here, or None: another worker's task
        else:
            task = self.tasks.get(target)
        if task is not None:
            if task.inline:
                acker: AckerTask = task  # type: ignore[assignment]  # typed when compiled
                acker.apply(stream, values)
                return
            task.inbox.append(new_tuple1(values, src.out_fields[stream], src.component, stream,
                                         src.task_id, root, edge))
            return
        size = 0 if _plain(values) else self._check_values(src, stream, values)
        batch = self._batch_to(target, src, stream)
        batch.values.append(values)
        batch.add1(len(batch.values) - 1, root, edge)
        self._added(batch.peer, size)  # type: ignore[arg-type]  # set with the batch

    def verdict(self, target: int, src: Task, root: int) -> None:
        """An acker's ack of ``root`` for spout task ``target``: the bare root in its queue.

        A spout task of this worker takes a bare root as an ack (``SpoutTask.process``), so
        the commonest verdict makes no list and no ``Tuple``; another worker's gets the
        ``__ack_ack`` tuple.
        """
        task = self.tasks.get(target)
        if task is not None and isinstance(task, SpoutTask):
            inbox = task.inbox
            if type(inbox) is deque:
                # the method of the type: ``inbox.append`` looked up by name costs about
                # 230 instructions compiled, once per tree
                _DEQUE_APPEND(inbox, root)  # a bare root: an ack
            else:
                inbox.append(root)  # type: ignore[arg-type]
            return
        self.deliver(target, src, ACK_ACK, [root], None)

    def _batch_to(self, target: int, src: Task, stream: str) -> _Batch:
        """The open (source, target, stream) batch for a task of another worker.

        Values of plain types (str, bytes, int, float, bool, None) of moderate size are
        packed at the flush, with the whole frame; the callers pack any other value first
        (``_check_values``), so a value that cannot cross workers fails at ``emit`` naming
        the component and stream, and a large one closes its frame.
        """
        opens = src._open
        if opens is None:
            opens = src._open = [None] * self._slots
        slot: int = target  # a C index, compiled
        batch: _Batch = opens[slot]
        if batch is None or batch.stream != stream:
            peer: _Peer = self._peers[self._task_worker[target]]  # type: ignore[assignment]
            batch = _Batch(target, src, stream)
            opens[slot] = batch
            peer.batches.append(batch)
            batch.peer = peer
        return batch

    def _added(self, peer: _Peer, size: int) -> None:
        """A tuple of ``size`` packed bytes (0: not packed) joined ``peer``'s frame."""
        peer.count += 1
        if peer.count >= self._batch or size > _LARGE:
            self._flush(peer.index)  # a large tuple closes its frame: frames stay far below the limit

    def _check_values(self, src: Task, stream: str, values: list) -> int:
        """Pack ``values`` once to check them; their size in bytes. Raises naming the emitter."""
        try:
            size = len(self._encoder.pack(values))
        except SerializationError as e:
            raise SerializationError(
                f"component {src.component!r} cannot send a tuple on stream {stream!r} to "
                f"another worker: {e}"
            ) from None
        if size > LARGE_TUPLE_BYTES:
            self._check_size(src, stream, size)
        return size

    def _check_size(self, src: Task, stream: str, size: int) -> None:
        if size > self._max_tuple:
            raise TupleTooLargeError(
                f"component {src.component!r} emitted a tuple of {size:,} bytes on stream "
                f"{stream!r} to another worker, over squall.max.tuple.bytes "
                f"({self._max_tuple:,}): send a reference (a key, a path) instead of the data"
            )

    def buffer_ack(self, acker: int, src: Task, root: int, value: int) -> None:
        """Ack for an acker in another worker: combined per root until the round ends.

        The ledger only XORs what it receives, so the acks a round produces for one root
        travel as one (root, value) pair (their XOR) instead of one per tuple.
        """
        buf = self._acks.get(acker)
        if buf is None:
            buf = self._acks[acker] = AckBuffer()
        buf.add(root, value)
        self._ack_src = src
        self._acks_due = True

    def _send_acks(self) -> None:
        """One message per remote acker for the round's acks: ``[bytes of root, value, ...]``."""
        self._acks_due = False
        src = self._ack_src
        assert src is not None  # set with every buffered ack
        for acker, buf in self._acks.items():
            data = buf.drain()
            if data is not None:  # acks that cancel out tell the ledger nothing
                self.deliver(acker, src, ACK_ACKS, [data], None)

    def _flush(self, index: int) -> None:
        """Send peer ``index``'s batches as one frame (or queue it behind unsent ones).

        With ``send_bound`` frames already waiting for the peer the batches stay open (the
        worker is ``held``: its bolts wait, so they grow by one slice's output at most).
        """
        peer: _Peer = self._peers[index]  # type: ignore[assignment]  # a peer, not this worker
        batches = peer.batches
        if not batches:
            return
        unsent = self._unsent[index]
        if len(unsent) >= self.send_bound:
            self.held = True
            return
        peer.batches = []
        peer.count = 0
        wire: list[list] = []
        acker = 0
        tuples = 0
        for batch in batches:
            batch.src._open[batch.target] = None  # type: ignore[index]  # batches after a flush start anew
            wire.append([batch.target, batch.src.task_id, batch.stream, batch.values,
                         batch.wire_ids(), batch.others])
            if batch.stream in SYSTEM_STREAM_FIELDS:
                acker += len(batch.values)
            else:
                tuples += len(batch.values)
        try:
            data = self._encoder.pack_frame(wire)
        except SerializationError as e:
            # a value mutated after its emit so that it no longer packs: its trees time out
            self.unsendable_frames += 1
            log.warning("worker %d could not send a frame to worker %d: %s (its tuples will "
                        "be replayed)", self.index, index, e)
            self.lost_frames(f"worker {self.index} could not send a frame to worker {index}: {e}",
                             {batch.src for batch in batches})
            return
        self.sent_frames += 1
        self.sent_bytes += len(data)
        self.sent_tuples += tuples
        self.sent_acker += acker
        if unsent or not self.transport.send(index, data):
            unsent.append(data)  # behind what is already waiting, so order holds
            n = len(unsent)
            if n > self.unsent_peak:
                self.unsent_peak = n
            if n >= self.send_bound:
                self.held = True

    def waiting(self) -> bool:
        """Retry the frames that wait for their peers; True while some peer is full or held.

        What is batched stays open (the round sends it with the spouts' output).
        """
        blocked = self._retry_unsent()
        return blocked or bool(self._pressure)

    def _retry_unsent(self) -> bool:
        """Send what waits for each peer, in order, while it takes frames; whether any still waits."""
        transport = self.transport
        blocked = False
        for index, unsent in self._unsent.items():
            while unsent and transport.send(index, unsent[0]):
                unsent.popleft()
            if unsent:
                blocked = True
        return blocked

    def _flush_all(self) -> bool:
        """Send the round's batches; returns True while some peer is full or held."""
        self._retry_unsent()
        for peer in self._peers:
            if peer is not None and peer.batches:
                self._flush(peer.index)
        blocked = False
        held = False
        bound = self.send_bound
        for unsent in self._unsent.values():
            if unsent:
                blocked = True
                if len(unsent) >= bound:
                    held = True  # a flush at the bound left its batches open
        self.held = held
        # on at the bound, off once nothing waits: no frame per round while at the edge
        if held and not self._announced:
            self._announce(True)
        elif self._announced and not blocked:
            self._announce(False)
        return blocked or bool(self._pressure)

    def _announce(self, held: bool) -> None:
        """Tell every peer whether this worker is held (their spouts stop while it is)."""
        self._announced = held
        data = self._encoder.pack_frame([[PRESSURE_TARGET, self.index, PRESSURE_STREAM,
                                          [[int(held)]], None, None]])
        for index, unsent in self._unsent.items():
            if held and len(unsent) >= self.send_bound:
                continue  # a peer this worker waits on: it takes frames again before it hears
            # one small frame per change, in order behind the data ("off" goes once none waits)
            if unsent or not self.transport.send(index, data):
                unsent.append(data)

    def pressured(self) -> list[int]:
        """The peers that said they are held (their spouts, and so these, wait)."""
        return sorted(self._pressure)

    def receive(self, room: int) -> int:
        """Take frames while the fullest queue has ``room``: it may pass capacity by one frame."""
        n = 0
        tasks = self.tasks
        sources = self._sources
        for _ in range(FRAMES_PER_ROUND):
            if n >= room:
                break
            polled = self.transport.poll(1)
            if not polled:
                break
            data = polled[0]
            try:
                messages = messages_of(data)
            except CorruptFrameError as e:
                self.corrupt_frames += 1
                log.warning("worker %d dropped a frame: %s (its tuples will be replayed)",
                            self.index, e)
                self.lost_frames(f"worker {self.index} dropped a corrupt frame: {e}")
                continue
            for batch in messages:
                n += self._take_batch(batch, tasks, sources)
        return n

    def _take_batch(self, batch: list, tasks: dict, sources: dict) -> int:
        """Queue one received batch's tuples (or apply them, for an acker); how many."""
        target, src, stream, vals, ids, others = batch
        task = tasks.get(target)
        count = len(vals)
        if task is None:
            if target == PRESSURE_TARGET:
                if vals and vals[0] and vals[0][0]:
                    self._pressure.add(src)
                else:
                    self._pressure.discard(src)
                return 0
            self.misrouted += count
            self.lost_frames(f"worker {self.index} dropped {count} tuple(s) for task {target}, "
                             f"which does not run here")
            return 0
        if ids is not None and (type(ids) is not bytes or len(ids) != 16 * count):
            self.corrupt_frames += 1
            log.warning("worker %d dropped a batch whose ids do not match its %d tuples (they "
                        "will be replayed)", self.index, count)
            self.lost_frames(f"worker {self.index} dropped a batch whose ids do not match its tuples")
            return 0
        if task.inline:
            acker: AckerTask = task  # type: ignore[assignment]  # typed when compiled
            for values in vals:
                acker.apply(stream, values)
            return count
        source = sources.get(src)
        if source is None:
            # a task this plan does not know: a worker relaunched alone under a new plan can
            # still hear from a task the live move is removing; its trees replay
            self.misrouted += count
            self.lost_frames(f"worker {self.index} dropped {count} tuple(s) from task {src}, "
                             f"which is not in its plan")
            return 0
        comp, out_fields = source
        fields = out_fields[stream]
        # the batch's tuples join the queue in one ``extend`` (not a method call per tuple)
        if ids is None:
            task.inbox.extend([new_tuple(values, fields, comp, stream, src, None)
                               for values in vals])
            return count
        view = u64_array(ids)
        tuples: list[Tuple] = []
        for i in range(count):
            if others is not None and i in others:
                tuples.append(new_tuple(vals[i], fields, comp, stream, src, others[i]))
            else:
                tuples.append(new_tuple1(vals[i], fields, comp, stream, src, view[2 * i],
                                         view[2 * i + 1]))
        task.inbox.extend(tuples)
        return count

    # ---- the loop ----------------------------------------------------------------------

    def send(self) -> bool:
        """Send the acks and batches so far; True while some peer cannot take more frames."""
        if self._acks_due:
            self._send_acks()
        return self._flush_all()

    def is_empty(self) -> bool:
        """Nothing batched and nothing waiting for a peer."""
        return (not any(p.batches for p in self._peers if p is not None)
                and not any(self._unsent.values()))
