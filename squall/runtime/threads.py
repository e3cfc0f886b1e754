"""Tasks off the worker's loop thread: a thread per task (JStorm's model), and what they share.

A task that runs off the loop thread must not touch what the loop owns (other tasks'
queues, the peers' batches, the acker ledgers). Its host (``host.TaskHost``) is a
``DeferredHost``, whose ``deliver`` and ``buffer_ack`` only record what the task asked, in
order. The loop thread replays those records each round, so routing to queues and
peers, acking and backpressure work exactly as for tasks on the loop thread.

``TaskThread`` runs one spout or bolt task on a thread of its own (``set_threaded()``, the
component configuration ``squall.task.threaded``): it takes tuples from the task's queue (the
same bounded queue, so a full queue throttles upstream as before), calls the task, and hands
each batch's records to the loop through a bounded outbox. Every call of the task's methods
(open/prepare, next_tuple, execute, ack, fail, activate, deactivate, close/cleanup) happens on
that thread; the loop sends it commands (activate, deactivate, timeouts, stop) instead of
calling the task itself.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any, Protocol

from squall.runtime.host import Task, TaskHost
from squall.runtime.tasks import SpoutTask

log = logging.getLogger("squall.threads")
THREAD_BATCH = 256
OUTBOX_BATCHES = 8  # records of this many batches may wait for the loop before the task waits
IDLE_WAIT = 0.05

DELIVER = 0
ACK = 1
DELIVER1 = 2


class Loop(Protocol):
    """The worker's loop as a task off its thread sees it (``Worker`` is one).

    The loop replays the task's records through its own host methods; ``active`` and
    ``throttled`` gate a spout's emits; ``transport.wake()`` ends the loop's wait.
    """

    plan: Any
    clock: Any
    errors: Any
    tap: Any
    transport: Any
    active: bool

    @property
    def throttled(self) -> bool:
        """True while backpressure keeps the spouts from emitting."""

    def deliver(self, target: int, src: Task, stream: str, values: list,
                ids: dict[int, int] | None) -> None:
        """As ``TaskHost.deliver``, on the loop thread."""

    def deliver1(self, target: int, src: Task, stream: str, values: list, root: int,
                 edge: int) -> None:
        """As ``TaskHost.deliver1``, on the loop thread."""

    def buffer_ack(self, acker: int, src: Task, root: int, value: int) -> None:
        """As ``TaskHost.buffer_ack``, on the loop thread."""

    def report_error(self, task: Task, error: BaseException) -> None:
        """As ``TaskHost.report_error`` (any thread: the error log is thread-safe)."""


class DeferredHost(TaskHost):
    """A task's host when the task runs off the loop thread: records, replayed by the loop.

    Errors are reported directly (the error log is thread-safe); the clock and the tap are
    the worker's own. A verdict (only an acker gives one, and ackers stay on the loop) is
    recorded as a delivery.
    """

    def __init__(self, worker: Loop) -> None:
        super().__init__(worker.plan, worker.clock, worker.errors, worker.tap)
        self.real = worker
        self.records: list[tuple] = []

    def sink(self) -> list[tuple]:
        """Where the calling task's records go now."""
        return self.records

    def deliver(self, target: int, src: Task, stream: str, values: list,
                ids: dict[int, int] | None) -> None:
        """Record a tuple for ``target``; the loop delivers it."""
        self.sink().append((DELIVER, target, src, stream, values, ids))

    def deliver1(self, target: int, src: Task, stream: str, values: list, root: int,
                 edge: int) -> None:
        """Record a tuple of one tree for ``target``; the loop delivers it."""
        self.sink().append((DELIVER1, target, src, stream, values, root, edge))

    def buffer_ack(self, acker: int, src: Task, root: int, value: int) -> None:
        """Record an ack for ``acker``; the loop sends it."""
        self.sink().append((ACK, acker, src, root, value))

    def take(self) -> list[tuple]:
        """The records so far, handed over (for the loop to replay)."""
        records, self.records = self.records, []
        return records


def replay(worker: Loop, records: list[tuple]) -> int:
    """Carry out, on the loop thread, what a task off it asked for; returns how many."""
    for r in records:
        if r[0] == DELIVER1:
            worker.deliver1(r[1], r[2], r[3], r[4], r[5], r[6])
        elif r[0] == DELIVER:
            worker.deliver(r[1], r[2], r[3], r[4], r[5])
        else:
            worker.buffer_ack(r[1], r[2], r[3], r[4])
    return len(records)


def detach(task: Task, host: DeferredHost) -> None:
    """Point ``task`` and its collectors at ``host``; acks go through the loop, not in place."""
    task.host = host
    collector: Any = getattr(task, "collector", None)
    if collector is not None:
        collector._host = host
    task.unbind_ackers()


class TaskThread:
    """Runs one task on a thread of its own; the loop thread drives it with ``post``."""

    def __init__(self, worker: Loop, task: Task) -> None:
        self.worker = worker
        self.task = task
        self.host = DeferredHost(worker)
        detach(task, self.host)
        self.spout: SpoutTask | None = task if isinstance(task, SpoutTask) else None
        self.outbox: deque[list[tuple]] = deque()
        self.busy = False
        self._commands: deque[tuple[Callable[[], Any], threading.Event]] = deque()
        self._wake = threading.Event()
        self._room = threading.Event()
        self._running = True
        self.started = threading.Event()
        self.start_error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True,
                                       name=f"squall-task-{task.component}-{task.task_id}")

    # ---- the loop thread's side --------------------------------------------------------

    def start(self) -> None:
        """Start the thread; it opens or prepares the task first (see ``started``)."""
        self.thread.start()

    def post(self, fn: Callable[[], Any]) -> threading.Event:
        """Run ``fn`` on the task's thread before its next call; the event is set after."""
        done = threading.Event()
        self._commands.append((fn, done))
        if not self.thread.is_alive() and self.started.is_set():
            self._release()
        self._wake.set()
        return done

    def poke(self) -> None:
        """Tuples arrived or a spout may emit again: wake the thread if it waits."""
        self._wake.set()

    def drain(self) -> int:
        """Replay the task's records on the loop thread; returns the work done."""
        work = 0
        outbox = self.outbox
        if not outbox:
            return 0
        while outbox:
            work += replay(self.worker, outbox.popleft())
        self._room.set()
        return work

    def after_round(self) -> None:
        """The loop's round ended: wake the thread if tuples wait or it runs a spout."""
        if self.task.inbox or self.spout is not None:
            self.poke()

    def idle(self) -> bool:
        """Nothing queued, nothing being handled, nothing waiting to be replayed."""
        return not self.busy and not self.task.inbox and not self.outbox

    def stop(self, graceful: bool, timeout: float) -> None:
        """End the thread (closing or cleaning up the task first when graceful); wait for it."""
        def halt() -> None:
            if graceful:
                self.task.stop()
            self._running = False
        self.post(halt)
        self._room.set()
        self.thread.join(timeout)
        if self.thread.is_alive():
            log.error("task %d (%s) did not stop within %.0fs", self.task.task_id,
                      self.task.component, timeout)

    # ---- the task's thread -------------------------------------------------------------

    def _main(self) -> None:
        self.task.owner = threading.get_ident()
        try:
            self.task.start()
        except BaseException as e:  # noqa: BLE001 - handed to the worker, which stops the start
            self.start_error = e
            self._running = False
            self.started.set()
            self._release()
            return
        self.started.set()
        try:
            while self._running:
                self._run_commands()
                if not self._running:
                    break
                if len(self.outbox) >= OUTBOX_BATCHES:
                    self._room.clear()
                    self.worker.transport.wake()
                    self._room.wait(IDLE_WAIT)  # the loop replays, then makes room
                    continue
                if not self._round():
                    self._wait()
        finally:
            self._release()

    def _round(self) -> int:
        task = self.task
        work = 0
        self.busy = True
        try:
            if task.inbox:
                work += task.process(THREAD_BATCH)
            spout = self.spout
            if spout is not None and self._may_emit(spout):
                n = spout.next_tuple()
                if n == 0:
                    spout.went_idle(perf_counter())
                else:
                    spout.idle_streak = 0
                work += n
            records = self.host.take()
            if records:
                self.outbox.append(records)
                self.worker.transport.wake()
        finally:
            self.busy = False
        return work

    def _may_emit(self, spout: SpoutTask) -> bool:
        real = self.worker
        return (real.active and not real.throttled and spout.can_emit()
                and spout.idle_until <= perf_counter())

    def _wait(self) -> None:
        wait = IDLE_WAIT
        spout = self.spout
        if spout is not None and spout.can_emit():
            wait = min(wait, max(0.0, spout.idle_until - perf_counter()))
        if wait > 0:
            self._wake.wait(wait)
        self._wake.clear()

    def _run_commands(self) -> None:
        while self._commands:
            fn, done = self._commands.popleft()
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - a command is task code: report, go on
                self.worker.report_error(self.task, e)
            finally:
                done.set()
        records = self.host.take()
        if records:
            self.outbox.append(records)
            self.worker.transport.wake()

    def _release(self) -> None:
        while self._commands:
            self._commands.popleft()[1].set()
