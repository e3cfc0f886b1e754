"""A worker: hosts a set of tasks and runs them from one loop thread.

The loop is the worker's only thread for user code. Each round it takes frames from its
peers, lets the bolt and acker tasks handle their queues (upstream bolts first, a batch
each per pass, passes until the queues are empty or ``BOLT_ROUND_BUDGET`` is used), lets
each spout emit while backpressure and ``topology.max.spout.pending`` allow, fires due
timers (ticks, timeouts, metrics) and sends the round's output to peers in one frame per
peer. Under load rounds grow and so do batches; when idle, a tuple waits for at most one
round.

A long round does not hold a batch (or a peer's frame) for its whole length: every
``squall.transfer.batch.time.ms`` of work (checked between slices of a task's queue and
between spout calls) the loop sends what it has batched and takes what has arrived, as
Heron's ``max.batch.time`` and Storm's flush tuple bound a batch's wait. Under light load
rounds are short and this never fires; under heavy load frames stay large anyway.

Backpressure: when a task's queue passes the high water mark or a peer cannot take more
frames, the spouts stop until every queue is below the low water mark and the peers have
taken what was waiting. Bolts never stop, so queues drain and nothing is dropped.
"""

from __future__ import annotations

import logging
import threading
from array import array
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any

from squall.api.errors import TopologyStartError
from squall.api.fields import Fields
from squall.api.topology import StormTopology
from squall.api.tuple import SYSTEM_COMPONENT, TICK_STREAM, Tuple, new_tuple, new_tuple1
from squall.runtime import clock as runtime_clock
from squall.runtime.acker import AckBuffer
from squall.runtime.assembly import make_task
from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.runtime.errors import ErrorLog
from squall.runtime.ids import u64_array, u64_bytes
from squall.runtime.plan import ACK_ACK, ACK_ACKS, ACKER, SYSTEM, SYSTEM_STREAM_FIELDS, TaskPlan
from squall.runtime.serialization import (
    CorruptFrameError,
    Encoder,
    SerializationError,
    TupleTooLargeError,
    messages_of,
)
from squall.runtime.tasks import PENDING_BUCKETS, AckerTask, BoltTask, SpoutTask, Task
from squall.runtime.transport import Transport

log = logging.getLogger("squall.worker")
EMPTY = Fields()
BOLT_BATCH = 256
SLICE = 16  # tuples a task handles between two looks at the clock (for the batch time)
SPOUT_BATCH = 64
FRAMES_PER_ROUND = 64
LARGE_TUPLE_BYTES = 65536  # above this a tuple's size is checked and it ends its frame
DEFAULT_MAX_TUPLE_BYTES = 16 * 1024 * 1024
THREADED = "squall.task.threaded"  # component configuration: a thread per task
THREAD_STOP_TIMEOUT = 30.0
TIMER_SLACK = 1e-9  # float sums of intervals must not make a timer a round late
IDLE_WAIT = 0.05  # the longest a worker with nothing to do sleeps before it looks again
DEFAULT_BATCH_TIME_MS = 1.0
BOLT_ROUND_BUDGET = 0.005  # seconds of bolt work a round after which no new pass starts
BOLT_PASSES = 64  # passes over the bolts a round at most (a cycle of bolts on a still clock)


class Timer:
    """A periodic action of the loop."""

    __slots__ = ("due", "interval", "action")

    def __init__(self, due: float, interval: float, action: Callable[[], Any]) -> None:
        self.due = due
        self.interval = interval
        self.action = action


class _Peer:
    """Another worker, as this one sends to it: the batches of the frame being filled."""

    __slots__ = ("index", "batches", "count")

    def __init__(self, index: int) -> None:
        self.index = index
        self.batches: list[_Batch] = []
        self.count = 0  # tuples in those batches


NO_IDS = array("Q")


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
# the two marks as C constants (worker.pxd), so a comparison makes no Python int per tuple
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


def _depths(sources: dict[str, list[tuple[str, str]]]) -> dict[str, int]:
    """Each component's longest chain of inputs from a spout (a cycle counts at most once round)."""
    depth = dict.fromkeys(sources, 0)
    for _ in range(len(sources)):
        changed = False
        for comp, inputs in sources.items():
            d = max((depth.get(src, 0) + 1 for src, _ in inputs if src != comp), default=0)
            if d > depth[comp]:
                depth[comp] = d
                changed = True
        if not changed:
            break
    return depth


class Worker:
    """Hosts the tasks the plan gives worker ``index``; knows nothing of Spark."""

    def __init__(
        self,
        *,
        topology_name: str,
        topology: StormTopology,
        conf: dict,
        plan: TaskPlan,
        index: int,
        transport: Transport,
        errors: ErrorLog | None = None,
        clock: Callable[[], float] | None = None,
        tap: Callable[[str, str, list, int], None] | None = None,
        active: bool = True,
    ) -> None:
        self.topology_name = topology_name
        self.topology = topology
        self.conf = conf
        self.plan = plan
        self.index = index
        self.transport = transport
        self.errors = errors or ErrorLog()
        # simulated while a test runs under squall.testing.simulated_time()
        self.clock = clock or runtime_clock.current()
        self.tap = tap
        self.active = active
        self.tasks: dict[int, Task] = {}
        self.spouts: list[SpoutTask] = []
        self._barrier_spouts: list[SpoutTask] = []  # the checkpoint spout, if here
        self.processors: list[Task] = []
        self.threads: list[Any] = []  # TaskThread of each task with a thread of its own
        self.asyncs: list[Any] = []  # AsyncBoltTask of each AsyncBolt task
        self._aio: Any = None  # the event loop of the async tasks, made on first use
        self.stuck: dict[int, dict] = {}  # task id -> the call it is stuck in (the watchdog's)
        self._watchdog: Any = None
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
        # the longest a batched tuple waits for its frame while the loop is busy (seconds)
        batch_ms = conf.get("squall.transfer.batch.time.ms")
        self._batch_time = float(DEFAULT_BATCH_TIME_MS if batch_ms is None else batch_ms) / 1000.0
        self._io_at = 0.0  # real time of the next mid-round send-and-take
        self._blocked = False  # a peer could not take a frame at the last send
        self._max_tuple = int(conf.get("squall.max.tuple.bytes") or DEFAULT_MAX_TUPLE_BYTES)
        self._capacity = int(conf.get("topology.executor.receive.buffer.size") or 32768)
        self._high = int(self._capacity * float(conf.get("topology.backpressure.water.mark.high", 0.8)))
        self._low = int(self._capacity * float(conf.get("topology.backpressure.water.mark.low", 0.2)))
        self.throttled = False
        self._fields: dict[tuple[str, str], Fields] = {}
        # task id -> its queue's bound ``append`` for the queued tasks here (None for other
        # workers' tasks and inline ackers): a local delivery is a list index and a C call,
        # not a dict lookup and a method lookup (set by ``build``; tasks never change after)
        self._appends: list[Any] = []
        self._inline: list[Any] = []  # task id -> the inline task (an acker) here, or None
        self._sources: dict[int, tuple[str, dict[str, Fields]]] = {}
        self._timers: list[Timer] = []
        self._commands: deque[tuple[Callable[[], None], threading.Event]] = deque()
        # real seconds per round for spouts' next_tuple calls: slow spouts cannot delay
        # ticks, timeouts or commands by more than one call
        self._spout_budget = float(conf.get("squall.spout.round.budget.ms", 5)) / 1000.0
        # real seconds per round for further passes over the bolts' queues (``run_once``)
        self._bolt_budget = BOLT_ROUND_BUDGET
        self._spout_cursor = 0
        self._running = False
        self._graceful = True
        self._thread: threading.Thread | None = None
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.start_error: BaseException | None = None
        self.corrupt_frames = 0
        self.unsendable_frames = 0
        self.misrouted = 0
        self.rounds = 0
        self.idle_rounds = 0
        self.work_done = 0
        self.early_sends = 0  # mid-round sends (the batch time ran out before the round's end)
        # what crossed to other workers: frames, their bytes (packed, before the transport's
        # link header), tuples of the topology's streams and acker messages (``transfer_stats``)
        self.sent_frames = 0
        self.sent_bytes = 0
        self.sent_tuples = 0
        self.sent_acker = 0

    # ---- building --------------------------------------------------------------------

    def build(self) -> None:
        """Unpickle and wire this worker's tasks (does not open or prepare them)."""
        plan = self.plan
        for comp, streams in plan.streams.items():
            for stream, sdef in streams.items():
                self._fields[(comp, stream)] = sdef.fields
        for comp in (ACKER, SYSTEM, *plan.streams):
            for stream, fields in SYSTEM_STREAM_FIELDS.items():
                self._fields[(comp, stream)] = fields
        by_component: dict[str, dict[str, Fields]] = {}
        for (comp, stream), fields in self._fields.items():
            by_component.setdefault(comp, {})[stream] = fields
        # source task -> (its component, stream -> fields): one lookup per received tuple
        self._sources = {task: (comp, by_component.get(comp, {}))
                         for task, comp in plan.task_component.items()}
        worker_tasks = plan.worker_tasks(self.index)
        local = set(worker_tasks)
        for ex in plan.worker_executors[self.index]:
            for task_id in ex.tasks:
                task = make_task(self, ex.component, task_id, worker_tasks, local)
                if task is not None:
                    task.out_fields = {s: f for (c, s), f in self._fields.items()
                                       if c == ex.component}
                    self.tasks[task_id] = task
        for task in self.tasks.values():
            task.bind_ackers(self.tasks)
        slots = max(max(plan.task_component, default=0), max(self.tasks, default=0)) + 1
        self._appends = [None] * slots
        self._inline = [None] * slots
        for task_id, task in self.tasks.items():
            if task.inline:
                self._inline[task_id] = task
            else:
                self._appends[task_id] = task.inbox.append
        own = {t.task_id for t in self.tasks.values()
               if t.kind in ("spout", "bolt") and t.conf.get(THREADED)}
        if own:
            from squall.runtime.threads import TaskThread  # threads.py builds on this module

            self.threads = [TaskThread(self, self.tasks[t]) for t in sorted(own)]
        self.asyncs = [t for t in self.tasks.values() if hasattr(t, "pump")]
        own |= {t.task_id for t in self.asyncs}
        self.spouts = [t for t in self.tasks.values()
                       if isinstance(t, SpoutTask) and t.task_id not in own]
        self._barrier_spouts = [t for t in self.spouts if t.component == CHECKPOINT_SPOUT]
        depth = _depths(plan.sources)
        # upstream first: what a bolt emits to a bolt of this worker is handled in the same
        # round, not after the spouts, the flush and the next round's frames
        self.processors = sorted((t for t in self.tasks.values()
                                  if not isinstance(t, SpoutTask) and t.task_id not in own),
                                 key=lambda t: (depth.get(t.component, len(depth)), t.task_id))
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
                append(new_tuple1(values, src.out_fields[stream], src.component, stream,
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
            task.inbox.append(root)  # type: ignore[arg-type]  # a bare root: an ack
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
        """Send peer ``index``'s batches as one frame (or queue it behind unsent ones)."""
        peer: _Peer = self._peers[index]  # type: ignore[assignment]  # a peer, not this worker
        batches = peer.batches
        if not batches:
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
            return
        self.sent_frames += 1
        self.sent_bytes += len(data)
        self.sent_tuples += tuples
        self.sent_acker += acker
        unsent = self._unsent[index]
        if unsent or not self.transport.send(index, data):
            unsent.append(data)  # behind what is already waiting, so order holds

    def _flush_all(self) -> bool:
        """Send the round's batches; returns True while some peer is full."""
        blocked = False
        for peer in self._peers:
            if peer is not None and peer.batches:
                self._flush(peer.index)
        for index, unsent in self._unsent.items():
            while unsent and self.transport.send(index, unsent[0]):
                unsent.popleft()
            blocked = blocked or bool(unsent)
        return blocked

    def _receive(self, room: int) -> int:
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
            self.misrouted += count
            return 0
        if ids is not None and (type(ids) is not bytes or len(ids) != 16 * count):
            self.corrupt_frames += 1
            log.warning("worker %d dropped a batch whose ids do not match its %d tuples (they "
                        "will be replayed)", self.index, count)
            return 0
        if task.inline:
            acker: AckerTask = task  # type: ignore[assignment]  # typed when compiled
            for values in vals:
                acker.apply(stream, values)
            return count
        comp, out_fields = sources[src]
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

    def run_once(self) -> int:
        """One round of the loop; returns the amount of work done (0 when idle)."""
        work = 0
        while self._commands:
            fn, done = self._commands.popleft()
            try:
                fn()
            finally:
                done.set()
            # not counted as work: a test asking whether the cluster is quiet must not
            # make it busy by asking
        now = self.clock()
        for timer in self._timers:
            if now + TIMER_SLACK >= timer.due:
                # fixed rate, as Storm's recurring timers: a late round does not shift
                # later firings; missed ones are skipped rather than fired in a burst
                timer.due += timer.interval
                if timer.due <= now + TIMER_SLACK:
                    timer.due = now + timer.interval
                timer.action()
                work += 1
        fullest = self._fullest()
        if fullest < self._capacity:
            work += self._receive(self._capacity - fullest)
        begun = perf_counter()
        self._io_at = begun + self._batch_time
        # passes over the bolts until their queues are empty or the phase's time is up: a
        # bolt fed faster than a batch a round (a split's words) is not held to a batch per
        # round while the spouts add to its queue, which only max.spout.pending then bounds
        deadline = begun + self._bolt_budget
        for _ in range(BOLT_PASSES):
            handled = 0
            for task in self.processors:
                if task.inbox:
                    handled += self._process(task)
            work += handled
            if handled == 0 or perf_counter() >= deadline:
                break
        for spout in self.spouts:
            if spout.inbox:
                work += self._process(spout)
        for th in self.threads:
            if th.outbox:
                work += th.drain()
        for at in self.asyncs:
            work += at.pump()
        if self._acks_due:
            self._send_acks()
        blocked = self._flush_all()
        fullest = self._fullest()
        if self.throttled:
            self.throttled = blocked or fullest > self._low
        else:
            self.throttled = blocked or fullest >= self._high
        if self.active and not self.throttled:
            work += self._run_spouts()
            self._flush_all()
        elif self.active and self._barrier_spouts:
            # checkpoint barriers are never starved by backpressure (RELIABILITY D14):
            # one tuple per interval, queued behind the data they mark
            work += self._run_barrier_spouts()
            self._flush_all()
        for th in self.threads:
            if th.task.inbox or th.spout is not None:
                th.poke()
        self.rounds += 1
        self.work_done += work
        return work

    def _process(self, task: Task) -> int:
        """Let ``task`` handle up to ``BOLT_BATCH`` queued tuples, in slices.

        Between slices, once the batch time has run out since the last send, the tuples
        batched so far go to their peers and arrived frames are taken (``_send_and_take``),
        so a tuple emitted early in a long round does not wait for the round's end.
        """
        done = 0
        taken = 0
        while done < BOLT_BATCH:
            n = task.process(min(SLICE, BOLT_BATCH - done))
            if n == 0:
                break
            done += n
            if perf_counter() >= self._io_at:
                # what arrives is work of the round, not of this task: counted against the
                # task's batch it cut the batch short whenever frames came, so a long queue
                # drained slower the busier the worker was
                taken += self._send_and_take()
        return done + taken

    def _send_and_take(self) -> int:
        """Mid-round: send the acks and batches so far, take arrived frames; how many tuples came.

        Frames are taken only while the fullest queue has room, as at a round's start, so
        queues still pass capacity by at most one frame. Sets ``_blocked`` when a peer could
        not take a frame (the spouts stop for the round).
        """
        self.early_sends += 1
        if self._acks_due:
            self._send_acks()
        self._blocked = self._flush_all()
        n = 0
        fullest = self._fullest()
        if fullest < self._capacity:
            n = self._receive(self._capacity - fullest)
        self._io_at = perf_counter() + self._batch_time
        return n

    def transfer_stats(self) -> dict[str, int]:
        """What this worker sent to others since it started, and how the loop sent it.

        ``tuples``: tuples of the topology's streams that crossed to another worker;
        ``acker``: acker messages that did (inits, combined acks, verdicts); ``frames`` and
        ``bytes``: the frames carrying both (packed, without the transport's link header);
        ``early_sends``: sends made mid-round because ``squall.transfer.batch.time.ms`` ran
        out; ``rounds``: loop rounds.
        """
        return {"frames": self.sent_frames, "bytes": self.sent_bytes, "tuples": self.sent_tuples,
                "acker": self.sent_acker, "early_sends": self.early_sends, "rounds": self.rounds}

    def _fullest(self) -> int:
        """The length of the longest task queue."""
        fullest = 0
        for task in self.tasks.values():
            n = len(task.inbox)
            if n > fullest:
                fullest = n
        return fullest

    def _run_spouts(self) -> int:
        """Call the spouts for at most the round's budget of real time.

        Each spout is asked up to ``SPOUT_BATCH`` times while it emits; the next round
        starts with the spout after the one that used up the budget, so every spout gets
        its turn however slow the others are. A spout that emitted nothing is left alone
        for its progressive wait (``SpoutTask.went_idle``).
        """
        spouts = self.spouts
        count = len(spouts)
        emitted = 0
        if count == 0:
            return 0
        now = perf_counter()
        deadline = now + self._spout_budget
        start = self._spout_cursor
        self._blocked = False
        for k in range(count):
            spout = spouts[(start + k) % count]
            if spout.idle_until > now:
                continue
            for _ in range(SPOUT_BATCH):
                if not spout.can_emit():
                    break
                n = spout.next_tuple()
                if n == 0:
                    spout.went_idle(perf_counter())
                    break
                spout.idle_streak = 0
                emitted += n
                now = perf_counter()
                if now >= self._io_at:
                    emitted += self._send_and_take()
                    if self._blocked:
                        break  # a peer is full: no more emits this round (backpressure)
                if now >= deadline:
                    break
            now = perf_counter()
            if now >= deadline or self._blocked:
                self._spout_cursor = (start + k + 1) % count
                break
        return emitted

    def _run_barrier_spouts(self) -> int:
        emitted = 0
        for spout in self._barrier_spouts:
            if spout.can_emit():
                emitted += spout.next_tuple()
        return emitted

    def _wait_time(self) -> float:
        """How long the loop may sleep: until a timer is due or a spout wants asking."""
        wait = IDLE_WAIT
        if self.active and not self.throttled:
            real = perf_counter()
            for spout in self.spouts:
                if spout.can_emit():
                    wait = min(wait, max(0.0, spout.idle_until - real))
        now = self.clock()
        for timer in self._timers:
            wait = min(wait, max(0.0, timer.due - now))
        return wait

    def loop(self) -> None:
        """Run rounds until stopped."""
        while self._running:
            try:
                work = self.run_once()
            except Exception as e:  # noqa: BLE001 - a runtime fault must not end the worker silently
                self.errors.report(SYSTEM, self.plan.component_tasks[SYSTEM][self.index], e)
                work = 0
            if work == 0:
                self.idle_rounds += 1
                self.transport.wait(self._wait_time())

    def _start_watchdog(self) -> None:
        limit = float(self.conf.get("squall.task.stuck.secs", 30) or 0)
        if limit > 0:
            from squall.runtime.stuck import Watchdog  # a thread; only where it is wanted

            cycle = float(self.conf.get("squall.backpressure.cycle.secs", 30) or 30)
            self._watchdog = Watchdog(self, limit, cycle)
            self._watchdog.start()

    def async_runner(self) -> Any:
        """The event loop of this worker's async tasks (started on first use)."""
        if self._aio is None:
            from squall.runtime.async_tasks import AsyncRunner

            self._aio = AsyncRunner(f"squall-async-{self.index}")
        return self._aio

    def close_async_runner(self) -> None:
        """Cancel the async calls in flight and stop their event loop (idempotent)."""
        if self._aio is not None:
            self._aio.close()
            self._aio = None

    def report_error(self, task: Task, error: BaseException) -> None:
        """Record an error raised by ``task``'s user code (log + topology info)."""
        self.errors.report(task.component, task.task_id, error)

    # ---- lifecycle ---------------------------------------------------------------------

    def open_tasks(self) -> None:
        """Build, then open spouts and prepare bolts; raises ``TopologyStartError``.

        A task with a thread of its own is opened on that thread.
        """
        if not self.tasks:
            self.build()
        own = {th.task.task_id: th for th in self.threads}
        for th in self.threads:
            th.start()
        for task in self.tasks.values():
            th = own.get(task.task_id)
            try:
                if th is None:
                    task.start()
                else:
                    th.started.wait()
                    if th.start_error is not None:
                        raise th.start_error
            except Exception as e:  # noqa: BLE001 - user code: report and stop the start
                self.errors.report(task.component, task.task_id, e)
                raise TopologyStartError(
                    f"component {task.component!r} task {task.task_id} failed to "
                    f"{'open' if task.kind == 'spout' else 'prepare'}: {type(e).__name__}: {e}"
                ) from e
        self._install_timers()
        if self.active:
            self._apply_active(True)

    def _apply_active(self, active: bool) -> None:
        """Tell every spout (on its own thread where it has one, waiting until it was told)."""
        self.active = active
        for spout in self.spouts:
            spout.activate() if active else spout.deactivate()
        told = [th.post(th.spout.activate if active else th.spout.deactivate)
                for th in self.threads if th.spout is not None]
        for done in told:
            done.wait()  # at most one call of that spout away

    def _install_timers(self) -> None:
        now = self.clock()
        conf = self.conf
        if self.plan.acker_tasks and conf.get("topology.enable.message.timeouts", True):
            timeout = float(conf.get("topology.message.timeout.secs") or 30)
            every = timeout / (PENDING_BUCKETS - 1)
            own = {th.task.task_id: th for th in self.threads}
            expirable = [t for t in self.tasks.values()
                         if isinstance(t, (SpoutTask, AckerTask)) and t.task_id not in own]
            # a spout on a thread of its own rotates its pending map on that thread
            posted = [th for th in self.threads if th.spout is not None]
            if expirable or posted:
                def expire() -> None:
                    for t in expirable:
                        t.expire()
                    for th in posted:
                        th.post(th.spout.expire)
                self._timers.append(Timer(now + every, every, expire))
        system_task = self.plan.component_tasks[SYSTEM][self.index]
        for task in self.tasks.values():
            if isinstance(task, BoltTask):
                freq = task.conf.get("topology.tick.tuple.freq.secs")
                if freq:
                    self._timers.append(Timer(now + float(freq), float(freq),
                                              self._ticker(task, system_task)))
        window = float(conf.get("squall.metrics.window.secs") or 10)
        self._timers.append(Timer(now + window, window, lambda: self._roll_metrics(window)))

    @staticmethod
    def _ticker(task: Task, system_task: int) -> Callable[[], None]:
        def tick() -> None:
            task.inbox.append(Tuple([], EMPTY, SYSTEM_COMPONENT, TICK_STREAM, system_task, None))
        return tick

    def _roll_metrics(self, window: float) -> None:
        for task in self.tasks.values():
            task.metrics.roll_window(window)

    def start(self) -> None:
        """Open the tasks and run the loop on a thread of its own."""
        self._running = True
        self._thread = threading.Thread(target=self._main, name=f"squall-worker-{self.index}",
                                        daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.build()
            me = threading.get_ident()
            for task in self.tasks.values():
                task.owner = me  # threaded and async tasks set their own thread
            self.open_tasks()
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits for the start
            for th in self.threads:
                th.stop(True, THREAD_STOP_TIMEOUT)  # the tasks that did open are closed
            self.start_error = e
            self._running = False
            self.started.set()
            self.stopped.set()
            self._release_commands()
            return
        self._start_watchdog()
        self.started.set()
        try:
            self.loop()
        finally:
            own = {th.task.task_id for th in self.threads}
            for th in self.threads:
                th.stop(self._graceful, THREAD_STOP_TIMEOUT)
            if self._graceful:
                for task in self.tasks.values():
                    if task.task_id not in own:
                        task.stop()
            self.close_async_runner()
            if self._watchdog is not None:
                self._watchdog.stop()
            self.transport.close()
            self.stopped.set()
            self._release_commands()

    def call(self, fn: Callable[[], None]) -> threading.Event:
        """Run ``fn`` on the loop thread at the start of the next round.

        The returned event is set once ``fn`` has run, or once the loop has ended without
        running it (a stopped worker calls no user code any more).
        """
        done = threading.Event()
        self._commands.append((fn, done))
        if self.stopped.is_set():
            self._release_commands()
        self.transport.wake()
        return done

    def query(self, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        """``fn()`` computed on the loop thread between rounds; ``TimeoutError`` if it did not run."""
        result: list[Any] = []
        if not self.call(lambda: result.append(fn())).wait(timeout) or not result:
            raise TimeoutError(f"worker {self.index} did not answer within {timeout}s")
        return result[0]

    def _release_commands(self) -> None:
        while self._commands:
            self._commands.popleft()[1].set()

    def set_active(self, active: bool) -> threading.Event:
        """Activate or deactivate the spouts (on the loop thread).

        Returns an event set once it is done: from then on no ``next_tuple`` call starts
        (deactivate), and each spout's ``activate``/``deactivate`` has been called.
        """
        return self.call(lambda: self._apply_active(active))

    def stop(self, graceful: bool = True) -> threading.Event:
        """Stop the loop; on a graceful stop spouts are closed and bolts cleaned up."""
        def halt() -> None:
            self._graceful = graceful
            self._running = False
        return self.call(halt)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the loop thread to end; True if it did."""
        return self.stopped.wait(timeout)

    def snapshot(self) -> tuple[int, bool, int, tuple[int, ...]]:
        """What a quiet check compares, read on the loop thread between rounds.

        (work done so far, idle, spout trees pending, next_tuple calls of each spout that
        may emit, -1 for one that may not). Spouts waiting after an empty call are asked
        again in the coming round, so a quiet check never mistakes a waiting spout with
        something to emit for an idle one.
        """
        calls = []
        spouts = self.spouts + [th.spout for th in self.threads if th.spout is not None]
        for spout in spouts:
            spout.idle_until = 0.0
            calls.append(spout.calls if self.active and spout.can_emit() else -1)
        for th in self.threads:
            th.poke()
        # a frame another worker sent after this worker's last poll is work to come: the
        # snapshot runs before this round's poll, so only the transport's queue shows it
        waiting = getattr(self.transport, "waiting", None)
        idle = self.is_idle() and not (waiting is not None and waiting())
        return (self.work_done, idle, sum(len(s.pending) for s in spouts), tuple(calls))

    def is_idle(self) -> bool:
        """True when no task has queued tuples and nothing waits to be sent."""
        return (not any(t.inbox for t in self.tasks.values())
                and not any(p.batches for p in self._peers if p is not None)
                and not any(self._unsent.values())
                and all(th.idle() for th in self.threads)
                and all(at.idle() for at in self.asyncs))
