"""The round: how a worker's loop shares one thread among its tasks (the core, no I/O).

One round (``run``):

1. take frames from peers while the fullest queue has room (``Exchange.receive``);
2. passes over the bolt and acker tasks, upstream first, a batch (``BOLT_BATCH``) each per
   pass, until a pass handles nothing or ``bolt_budget`` seconds are used: a bolt fed
   faster than a batch a round (a split's words) is not starved while the spouts add to
   its queue;
3. the spouts' verdicts (acks, fails) and the records of tasks off the loop (threads, asyncio);
4. send what the round produced (``Exchange.send``), which says whether a peer is full; when
   the spouts are about to run, the bolts' output waits for theirs and goes in the same
   frames (``Exchange.waiting`` says whether a peer is full, sending nothing new): a frame
   wakes ZeroMQ's I/O threads on both sides, and one frame per peer a round instead of two
   raised the word count's rate by 6-15%;
5. the backpressure decision: spouts stop when a queue passes the high water mark or a peer
   is full, and start again once every queue is below the low mark and the peers took what
   waited; bolts stop only while a peer has the send buffer's bound of frames waiting
   (``holding``), and frames are then taken even past the queues' capacity, so nothing is
   dropped and no two workers wait on each other forever;
6. unless throttled, the spouts, each up to ``spout_batch`` calls while it emits, within
   ``spout_budget`` seconds, starting after the one that used the budget last round; a
   throttled round still lets the checkpoint spout emit its barriers (RELIABILITY D14).

A long round does not hold a batch for its whole length: once ``batch_time`` has passed
since the last send (looked at between slices of ``SLICE`` tuples and between spout calls),
the round sends what it has and takes what arrived (``exchange``), as Heron's
``max.batch.time`` and Storm's flush tuple bound a batch's wait.

The core holds the decisions and their state (budgets, passes, marks, the spout cursor,
the time of the next send) and nothing else: no socket, thread or clock. Its shells are
passed in: ``exchange`` (the transport shell, ``transfer.Transfer``), ``now`` (a real-time
clock, ``time.perf_counter``) and the tasks (anything with ``inbox`` and ``process``), so
tests drive it with fakes and a fake clock (tests/unit/test_round.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from time import perf_counter
from typing import Any, Protocol

from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.runtime.host import Task
from squall.runtime.tasks import SpoutTask

try:
    import cython
except ImportError:  # plain Python without Cython installed: tuple's stand-in (never compiled)
    from squall.api.tuple import cython  # type: ignore[assignment]

# perf_counter is clock_gettime(CLOCK_MONOTONIC) on Linux: compiled, read in C (host.pxd)
REAL_NOW = perf_counter if sys.platform.startswith("linux") else None
BOLT_BATCH = 256  # tuples a task handles per pass at most
SLICE = 16  # tuples a task handles between two looks at the clock (for the batch time)
SPOUT_BATCH = 128  # next_tuple calls per spout per round at most (topology.spout.max.batch.size)
BOLT_ROUND_BUDGET = 0.005  # seconds of bolt work a round after which no new pass starts
BOLT_PASSES = 64  # passes over the bolts a round at most (a cycle of bolts on a still clock)
DEFAULT_BATCH_TIME_MS = 1.0
IDLE_WAIT = 0.05  # the longest a worker with nothing to do sleeps before it looks again


class Exchange(Protocol):
    """The transport shell as the round sees it (``transfer.Transfer`` is one)."""

    def receive(self, room: int) -> int:
        """Queue tuples of arrived frames until ``room`` tuples came; how many came."""
        ...

    def send(self) -> bool:
        """Send what is batched; True while some peer cannot take more frames."""
        ...

    def waiting(self) -> bool:
        """``send``'s answer without sending what is batched: frames that wait are retried."""
        ...

    # an exchange may also have ``held``: a peer has its send buffer's bound of frames
    # waiting, so the bolts wait (``Round.holding``)


class RoundConfig:
    """The round's settings, read from a topology configuration."""

    def __init__(self, conf: dict) -> None:
        self.capacity = int(conf.get("topology.executor.receive.buffer.size") or 32768)
        self.high = int(self.capacity * float(conf.get("topology.backpressure.water.mark.high", 0.8)))
        self.low = int(self.capacity * float(conf.get("topology.backpressure.water.mark.low", 0.2)))
        # real seconds per round for spouts' next_tuple calls: slow spouts cannot delay
        # ticks, timeouts or commands by more than one call
        self.spout_budget = float(conf.get("squall.spout.round.budget.ms", 5)) / 1000.0
        self.spout_batch = max(1, int(conf.get("topology.spout.max.batch.size") or SPOUT_BATCH))
        # the longest a batched tuple waits for its frame while the loop is busy (seconds)
        batch_ms = conf.get("squall.transfer.batch.time.ms")
        self.batch_time = float(DEFAULT_BATCH_TIME_MS if batch_ms is None else batch_ms) / 1000.0
        self.bolt_budget = BOLT_ROUND_BUDGET


def upstream_first(tasks: Iterable[Task], sources: dict[str, list[tuple[str, str]]]) -> list[Task]:
    """``tasks`` ordered by their component's depth from a spout, then by task id.

    What a bolt emits to a bolt of this worker is then handled in the same round, not after
    the spouts, the flush and the next round's frames.
    """
    depth = dict.fromkeys(sources, 0)
    for _ in range(len(sources)):  # longest chain of inputs; a cycle counts at most once round
        changed = False
        for comp, inputs in sources.items():
            d = max((depth.get(src, 0) + 1 for src, _ in inputs if src != comp), default=0)
            if d > depth[comp]:
                depth[comp] = d
                changed = True
        if not changed:
            break
    return sorted(tasks, key=lambda t: (depth.get(t.component, len(depth)), t.task_id))


class Round:
    """The decisions of a worker's rounds, and their state (see the module's docstring).

    ``processors``: bolt and acker tasks on the loop, upstream first; ``spouts``: spout tasks
    on the loop (``barrier_spouts``: the checkpoint spout among them); ``queues``: every task
    whose queue counts for backpressure; ``offloop``: task threads and async tasks, each with
    ``drain()`` (replay what it did, the work) and ``after_round()``.
    """

    def __init__(self, config: RoundConfig, exchange: Exchange,
                 now: Callable[[], float] | None = None) -> None:
        self.exchange = exchange
        self.now = now or perf_counter  # real time: budgets and the batch time
        self.capacity = config.capacity
        self.high = config.high
        self.low = config.low
        self.bolt_budget = config.bolt_budget
        self.spout_budget = config.spout_budget
        self.spout_batch = config.spout_batch
        self.batch_time = config.batch_time
        self.processors: list[Task] = []
        self.spouts: list[SpoutTask] = []
        self.barrier_spouts: list[SpoutTask] = []
        self.queues: list[Task] = []
        self.offloop: list[Any] = []
        self.aligners: list[Any] = []
        self.holders: list[Any] = []
        self.throttled = False
        self.throttled_rounds = 0  # rounds whose spouts backpressure held back (the autoscaler's signal)
        self.blocked = False  # a peer could not take a frame at the last send
        self.io_at = 0.0  # real time of the next mid-round send-and-take
        self.spout_cursor = 0
        self.rounds = 0
        self.work_done = 0
        self.early_sends = 0  # mid-round sends (the batch time ran out before the round's end)
        self.can_hold = hasattr(exchange, "held")
        self.in_bolts = False  # the bolt passes are running (``holding`` may stop them)
        self.was_held = False
        self.held_rounds = 0  # rounds whose bolts waited for a peer (the send buffer's bound)
        self.overflow_rounds = 0  # rounds held with a full queue: frames taken past capacity
        self.trace: Any = None  # a ``round_trace.RoundTrace`` while rounds are recorded

    def place(self, tasks: Iterable[Task], threads: list[Any], asyncs: list[Any],
              sources: dict[str, list[tuple[str, str]]]) -> None:
        """Serve ``tasks``: on the loop, bolts upstream first (by ``sources``); the others offloop.

        ``threads`` (``TaskThread``) and ``asyncs`` (async tasks) are driven through ``drain``
        and ``after_round``; every task's queue counts for backpressure.
        """
        tasks = list(tasks)
        offloop = [*threads, *asyncs]
        own = {th.task.task_id for th in threads} | {t.task_id for t in asyncs}
        self.spouts[:] = [t for t in tasks if isinstance(t, SpoutTask) and t.task_id not in own]
        self.barrier_spouts = [t for t in self.spouts if t.component == CHECKPOINT_SPOUT]
        self.processors[:] = upstream_first(
            (t for t in tasks if not isinstance(t, SpoutTask) and t.task_id not in own), sources)
        self.queues = tasks
        self.offloop = offloop
        # exactly-once bolts: what they hold for alignment left their queue but is still
        # input not handled, so it counts for the spouts' backpressure (``pressure``)
        self.aligners = [t for t in tasks if getattr(t, "alignment", None) is not None]
        # bolts that hold input beyond their queue (a ShellBolt's subprocess,
        # ``holding.HoldingBoltTask``): what they hold counts for backpressure too
        self.holders = [t for t in tasks if callable(getattr(t, "held_input", None))]

    def time(self) -> float:
        """``now()`` (real time: budgets, the batch time); read in C when compiled and it is perf_counter."""
        now = self.now
        if cython.compiled and now is REAL_NOW:
            return _c_monotonic()  # type: ignore[name-defined]  # noqa: F821 - host.pxd's C function
        return now()

    def run(self, active: bool) -> int:
        """One round (``active``: the topology is active, spouts may emit); the work done."""
        work = 0
        exchange = self.exchange
        trace = self.trace
        if trace is not None:
            trace.begin(self.time(), self.early_sends)
        room = self.room()
        if room > 0:
            work += exchange.receive(room)
        begun = self.time()
        if trace is not None:
            trace.received(begun, work)
        self.io_at = begun + self.batch_time
        deadline = begun + self.bolt_budget
        self.was_held = False
        self.in_bolts = True
        for _ in range(BOLT_PASSES):
            handled = 0
            for task in self.processors:
                if task.inbox:
                    handled += self.process(task)
            work += handled
            if handled == 0 or self.time() >= deadline:
                break
        self.in_bolts = False
        if trace is not None:
            trace.bolts_done(self.time(), work)
        if self.was_held:
            self.held_rounds += 1
        for spout in self.spouts:
            if spout.inbox:
                work += self.process(spout)
        for side in self.offloop:
            work += side.drain()
        # the spouts run next unless the gate stops them: then the bolts' output waits
        # for theirs (at most the batch time, as any batched tuple) and shares its frames
        deferred = active and not self.throttled and len(self.spouts) > 0
        blocked = exchange.waiting() if deferred else exchange.send()
        work += self.gate_spouts(active, blocked, self.pressure() if self.aligners or self.holders
                                 else self.fullest(), deferred)
        for side in self.offloop:
            side.after_round()
        self.rounds += 1
        self.work_done += work
        if trace is not None:
            trace.end(self.time(), work, self.early_sends, self.throttled)
        return work

    def gate_spouts(self, active: bool, blocked: bool, fullest: int, deferred: bool = False) -> int:
        """Decide backpressure from ``blocked`` and the ``fullest`` queue; run the spouts it allows.

        ``deferred``: the round has not sent the bolts' output yet; it goes now whether or
        not the spouts run.
        """
        if self.throttled:
            self.throttled = blocked or fullest > self.low
        else:
            self.throttled = blocked or fullest >= self.high
        if self.throttled:
            self.throttled_rounds += 1
        work = 0
        if active and not self.throttled:
            work = self.run_spouts()
            self.exchange.send()
        elif active and self.barrier_spouts:
            # checkpoint barriers are never starved by backpressure (RELIABILITY D14):
            # one tuple per interval, queued behind the data they mark
            for spout in self.barrier_spouts:
                if spout.can_emit():
                    work += spout.next_tuple()
            self.exchange.send()
        elif deferred:
            self.exchange.send()
        return work

    def process(self, task: Task) -> int:
        """Let ``task`` handle up to ``BOLT_BATCH`` queued tuples, in slices.

        Between slices, once the batch time has run out since the last send, the tuples
        batched so far go to their peers and arrived frames are taken (``exchange``), so a
        tuple emitted early in a long round does not wait for the round's end.
        """
        done = 0
        taken = 0
        while done < BOLT_BATCH:
            if self.in_bolts and self.can_hold and self.holding():
                break
            n = task.process(min(SLICE, BOLT_BATCH - done))
            if n == 0:
                break
            done += n
            if self.time() >= self.io_at:
                # what arrives is work of the round, not of this task: counted against the
                # task's batch it cut the batch short whenever frames came, so a long queue
                # drained slower the busier the worker was
                taken += self.exchange_now()
        return done + taken

    def exchange_now(self) -> int:
        """Mid-round: send what is batched, take arrived frames; how many tuples came.

        Frames are taken only while the fullest queue has room, as at a round's start, so
        queues still pass capacity by at most one frame. Sets ``blocked`` when a peer could
        not take a frame (the spouts stop for the round).
        """
        self.early_sends += 1
        self.blocked = self.exchange.send()
        n = 0
        room = self.room()
        if room > 0:
            n = self.exchange.receive(room)
        self.io_at = self.time() + self.batch_time
        return n

    def holding(self) -> bool:
        """Whether the bolts wait: the exchange is ``held`` (a peer has its bound of frames)."""
        ex: Any = self.exchange  # a ``transfer.Transfer``: ``can_hold`` said it has ``held``
        if ex.held:
            self.was_held = True
            return True
        return False

    def room(self) -> int:
        """Tuples to take from arrived frames: what the fullest queue has room for.

        A held worker whose queues are full takes a queue's capacity more (``overflow_rounds``):
        its bolts wait, and a worker that took no frames either could wait forever on a peer
        held by it in turn (the acker messages of both ride the frames neither takes). What
        it takes past capacity is bounded by what was in flight to it, since every spout of
        the topology stops while it is held.
        """
        room = self.capacity - self.fullest()
        if room <= 0 and self.can_hold:
            ex: Any = self.exchange
            if ex.held:
                self.overflow_rounds += 1
                return self.capacity
        return room

    def fullest(self) -> int:
        """The length of the longest task queue."""
        fullest = 0
        for task in self.queues:
            n = len(task.inbox)
            if n > fullest:
                fullest = n
        return fullest

    def pressure(self) -> int:
        """``fullest``, with what bolts hold beyond their queues added to their queues.

        Exactly-once bolts hold input for alignment; a ``ShellBolt``'s subprocess holds
        what it has not acked yet (``held_input``). Only for the spouts' gate: frames are
        still taken by the queues alone, since the barrier that releases what is held may
        be in a frame not yet taken.
        """
        fullest = self.fullest()
        for task in self.aligners:
            n = len(task.inbox) + len(task.alignment.held)
            if n > fullest:
                fullest = n
        for task in self.holders:
            n = len(task.inbox) + task.held_input()
            if n > fullest:
                fullest = n
        return fullest

    def run_spouts(self) -> int:
        """Call the spouts for at most the round's spout budget of real time.

        Each spout is asked up to ``spout_batch`` times while it emits; the next round starts
        with the spout after the one that used up the budget, so every spout gets its turn
        however slow the others are. A spout that emitted nothing is left alone for its
        progressive wait (``SpoutTask.went_idle``).
        """
        spouts = self.spouts
        count = len(spouts)
        emitted = 0
        if count == 0:
            return 0
        now = self.time()
        deadline = now + self.spout_budget
        start = self.spout_cursor
        self.blocked = False
        for k in range(count):
            spout = spouts[(start + k) % count]
            if spout.idle_until > now:
                continue
            for _ in range(self.spout_batch):
                if not spout.can_emit():
                    break
                n = spout.next_tuple()
                if n == 0:
                    spout.went_idle(self.time())
                    break
                spout.idle_streak = 0
                emitted += n
                now = self.time()
                if now >= self.io_at:
                    emitted += self.exchange_now()
                    if self.blocked:
                        break  # a peer is full: no more emits this round (backpressure)
                if now >= deadline:
                    break
            now = self.time()
            if now >= deadline or self.blocked:
                self.spout_cursor = (start + k + 1) % count
                break
        return emitted

    def spout_wait(self, active: bool) -> float:
        """How long the loop may sleep as far as the spouts go: until one wants asking."""
        wait = IDLE_WAIT
        if active and not self.throttled:
            real = self.time()
            for spout in self.spouts:
                if spout.can_emit():
                    wait = min(wait, max(0.0, spout.idle_until - real))
        return wait
