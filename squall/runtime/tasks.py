"""Task runners: one spout, bolt or acker instance and the calls its host makes on it.

Every method here runs on the thread that runs the task (the worker's loop, or the task's
own thread); user code is never called concurrently for one task. A task reaches the rest
of the topology only through its ``TaskHost`` (``host.py``).
"""

from __future__ import annotations

import logging
from typing import Any

from squall.api.components import BasicBolt, Bolt, Spout
from squall.api.context import TopologyContext
from squall.api.errors import FailedException, ReportedFailedException
from squall.api.tuple import Tuple
from squall.runtime.acker import ACKED, FAILED_TREE, AckerLedger
from squall.runtime.checkpoint import CHECKPOINT_STREAM, Action, Barrier
from squall.runtime.collectors import (
    BasicOutputCollector,
    OutputCollector,
    SpoutOutputCollector,
    StreamRoute,
)
from squall.runtime.failures import TIMEOUT, Failure, describe, from_detail
from squall.runtime.hooks import add_auto_hooks
from squall.runtime.host import Task, TaskHost
from squall.runtime.ids import u64_array
from squall.runtime.metrics import EXEC_SAMPLES
from squall.runtime.plan import ACK_ACK, ACK_ACKS, ACK_FAIL, ACK_INIT, ACK_RESET
from squall.runtime.rotating import PendingMap

log = logging.getLogger("squall.task")
PENDING_BUCKETS = 3
MAX_COUNTED_FAILURES = 65536  # failing msg ids counted per spout task for max retries


_CHECKPOINT: str = CHECKPOINT_STREAM  # a C global str, compiled (tasks.pxd)


def sample_every(conf: dict) -> int:
    """One in how many executes (bolts) or tracked emits (spouts) is timed.

    ``topology.stats.sample.rate``: Storm's 0.05 by default, one in 20; 0 for none.
    """
    rate = float(conf.get("topology.stats.sample.rate") or 0.05)
    return max(1, int(round(1.0 / rate))) if rate > 0 else 0


def _is_checkpoint(stream: Any) -> bool:
    """True for the ``$checkpoint`` stream.

    Compiled, the lengths of two values typed ``str`` are compared first, in C: a data
    stream's mostly differs. ``==`` alone cost about 130 instructions per bolt tuple (Cython
    3.3 compares two strs with ``PyUnicode_Compare``, an ordering, below Python 3.14).
    """
    if type(stream) is str:
        s = stream
        return len(s) == len(_CHECKPOINT) and s == _CHECKPOINT
    return bool(stream == CHECKPOINT_STREAM)


class MaxRetriesError(RuntimeError):
    """A spout message failed more often than ``squall.spout.max.retries`` allows."""


class SpoutTask(Task):
    """Runs a spout: ``next_tuple`` when allowed, ack/fail callbacks, timeouts."""

    kind = "spout"

    def __init__(self, host: TaskHost, task_id: int, component: str, context: TopologyContext,
                 conf: dict, spout: Spout, routes: dict[str, StreamRoute]) -> None:
        super().__init__(host, task_id, component, context, conf)
        self.spout = spout
        # root id -> (msg_id, emit time); timed out by rotation, never by a scan
        self.pending = PendingMap(PENDING_BUCKETS)
        self.collector = SpoutOutputCollector(self, routes, self.pending, sample_every(conf))
        max_pending = conf.get("topology.max.spout.pending")
        self.max_pending: int | None = int(max_pending) if max_pending else None
        # the collector's: msg ids to ack (untracked) or fail (unsendable) after next_tuple
        self._ack_soon: list[Any] = self.collector.acks_soon
        self._fail_soon: list[Any] = self.collector.fails_soon
        # msg id, complete latency (ms), ...: trees that completed inside a chain's call
        self._completed_soon: list[Any] = self.collector.completed_soon
        self.active = False
        retries = conf.get("squall.spout.max.retries")
        # the system's own spouts (checkpoints) decide their replays themselves
        system = component.startswith(("$", "__"))
        self.max_retries: int | None = None if retries is None or system else int(retries)
        self._failures: dict[Any, int] = {}  # msg id -> failures so far, while it has some
        # a spout that takes the reason (ReliableSpout) counts its retries itself
        fail_with_reason = getattr(spout, "fail_with_reason", None)
        self._fail_with_reason = fail_with_reason if callable(fail_with_reason) else None
        # Storm's WaitStrategyProgressive: how long to leave a spout that emitted nothing
        self.calls = 0  # next_tuple calls so far
        self.idle_streak = 0
        self.idle_until = 0.0  # time.perf_counter() before which next_tuple is not called
        self._level1 = int(conf.get("topology.spout.wait.progressive.level1.count") or 0)
        self._level2 = self._level1 + int(conf.get("topology.spout.wait.progressive.level2.count") or 0)
        self._level3 = float(conf.get("topology.spout.wait.progressive.level3.sleep.millis", 1)) / 1000.0

    def start(self) -> None:
        """Add the ``topology.auto.task.hooks``, then open the spout."""
        add_auto_hooks(self.conf, self.component, self.context)
        self.spout.open(self.conf, self.context, self.collector)

    def stop(self) -> None:
        """Close the spout."""
        self._cleanup_hooks()
        self._call(self.spout.close)

    def activate(self) -> None:
        """Called when the topology becomes active."""
        if not self.active:
            self.active = True
            self._call(self.spout.activate)

    def deactivate(self) -> None:
        """Called when the topology becomes inactive."""
        if self.active:
            self.active = False
            self._call(self.spout.deactivate)

    def can_emit(self) -> bool:
        """True when ``next_tuple`` may be called (active, below max pending)."""
        return self.active and (self.max_pending is None or len(self.pending) < self.max_pending)

    def next_tuple(self) -> int:
        """Call ``next_tuple`` once; returns how many tuples it emitted."""
        before = self.metrics.emitted
        self.calls += 1
        try:
            self.spout.next_tuple()
        except (Exception, SystemExit) as e:  # noqa: BLE001 - user code (sys.exit too): report, carry on
            self.next_tuple_raised(e)
        if self._completed_soon:
            self._run_completed_soon()
        if self._ack_soon:
            self._run_acks_soon()
        if self._fail_soon:
            pending = self._fail_soon[:]
            del self._fail_soon[:]
            now = self.host.clock()
            for msg_id in pending:
                # failed at its emit (here, not downstream): no latency
                self._failed(msg_id, now, [None, self.component, self.task_id, None])
        return self.metrics.emitted - before

    def next_tuple_raised(self, error: BaseException) -> None:
        """The spout's ``next_tuple`` raised ``error``: report it (the task carries on)."""
        self.host.report_error(self, error)

    def went_idle(self, now: float) -> None:
        """``next_tuple`` emitted nothing at real time ``now``: wait progressively longer."""
        streak = self.idle_streak = self.idle_streak + 1
        if streak <= self._level1:
            return  # asked again next round
        self.idle_until = now + (0.0001 if streak <= self._level2 else self._level3)

    def _run_completed_soon(self) -> None:
        """The spout's ``ack`` for trees that completed inside their chain's call.

        The same as ``_acked`` for a tree the acker saw complete, minus the pending entry
        (there never was one); after ``next_tuple`` returns, never inside it.
        """
        done = self._completed_soon
        if len(done) == 2:
            # one tree (a spout emits one tuple a call, mostly): no copy of the list (about
            # 180 instructions compiled). Not two pops: a pop that shrinks a list reallocs,
            # which cost more than the copy. Emptied before the spout's ack, which may emit.
            msg_id = done[0]
            latency = done[1]
            del done[:]
            self._tree_done(msg_id, latency)
            return
        done = self._completed_soon[:]
        del self._completed_soon[:]
        for i in range(0, len(done), 2):
            self._tree_done(done[i], done[i + 1])

    def _run_acks_soon(self) -> None:
        pending = self._ack_soon[:]
        del self._ack_soon[:]
        ack = self.spout.ack  # once per round's acks, not per message
        m = self.metrics
        for msg_id in pending:
            m.acked += 1
            try:
                ack(msg_id)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - user code (sys.exit too): report, carry on
                self.host.report_error(self, e)
            if self.hooks is not None:
                self.hooks.spout_ack(msg_id, 0.0)  # acked at once, as Storm's timeDelta 0

    def process(self, budget: int) -> int:
        """Take up to ``budget`` queued verdicts: a bare root is an ack from a local acker."""
        inbox = self.inbox
        popleft = self.inbox_popleft()
        n = min(budget, len(inbox))
        for _ in range(n):
            item = popleft()
            if type(item) is int:
                self._acked(item)
            else:
                self.handle(item)
        return n

    def handle(self, tup: Tuple) -> None:
        """An acker's verdict on one of this task's roots, as a tuple."""
        stream = tup.stream
        root = tup.values[0]
        if stream == ACK_RESET:
            self.pending.touch(root)
        elif stream == ACK_ACK:
            self._acked(root)
        elif stream == ACK_FAIL:
            pending = self.pending
            if not pending.take(root):
                log.debug("task %d: fail for unknown or timed-out root %x", self.task_id, root)
                return
            self._failed(pending.msg_id, pending.emitted_at, tup.values)

    def _acked(self, root: int) -> None:
        """The tree of ``root`` completed: the spout's ``ack``."""
        pending = self.pending
        if not pending.take(root):
            log.debug("task %d: ack for unknown or timed-out root %x", self.task_id, root)
            return
        emitted_at = pending.emitted_at
        self._tree_done(pending.msg_id, (self.host.clock_now() - emitted_at) * 1000.0
                        if emitted_at >= 0.0 else -1.0)

    def _tree_done(self, msg_id: Any, latency: float) -> None:
        """The spout's ``ack`` of a completed tree, with its complete latency in ms.

        -1.0: the tree was not timed (``topology.stats.sample.rate``).
        """
        self.metrics.acked += 1
        if latency >= 0.0:
            self.metrics.record_complete(latency)
        if self._failures:
            self._forget(msg_id)
        # ``_call`` inlined: once per tree, its bound method, argument tuple and the
        # spout's bound ``ack`` cost about 500 instructions of a pipeline sentence
        try:
            self.spout.ack(msg_id)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - user code (sys.exit too): report, carry on
            self.host.report_error(self, e)
        if self.hooks is not None:
            self.hooks.spout_ack(msg_id, latency if latency >= 0.0 else None)

    def expire(self) -> int:
        """Rotate the pending buckets; fail what timed out. Returns how many."""
        expired = self.pending.rotate()
        for msg_id, emitted_at in expired:
            self._failed(msg_id, emitted_at, None)
        return len(expired)

    def _failed(self, msg_id: Any, emitted_at: float, verdict: list | None) -> None:
        """A tree failed or timed out: the spout's ``fail`` (it decides to replay).

        Unless ``msg_id`` has failed ``squall.spout.max.retries`` times already (E1): then
        the message is given up, the error reported and the spout's ``ack`` called, so that
        a poison message cannot be replayed forever.

        A spout with ``fail_with_reason`` (``ReliableSpout``) gets the reason instead
        (``verdict`` is the acker's ``[root, component, task, error]``; None: a timeout)
        and applies its own retry limit, which defaults to the same key.
        """
        self.metrics.failed += 1
        if self._fail_with_reason is not None:
            failure = Failure(TIMEOUT) if verdict is None else from_detail(verdict[1:4])
            self._call(self._fail_with_reason, msg_id, failure)
            self._fail_hooks(msg_id, emitted_at)
            return
        limit = self.max_retries
        if limit is not None:
            try:
                count = self._failures.pop(msg_id, 0) + 1
            except TypeError:  # an unhashable msg id cannot be counted: plain fail
                count = 0
            if count > limit:
                self.host.report_error(self, MaxRetriesError(
                    f"message {msg_id!r} failed {count} times "
                    f"(squall.spout.max.retries={limit}): given up and acked"
                ))
                self._call(self.spout.ack, msg_id)
                self._fail_hooks(msg_id, emitted_at)  # the tree failed, whatever the spout is told
                return
            if count:
                if len(self._failures) >= MAX_COUNTED_FAILURES:
                    # msg ids the spout never replays must not hold memory forever
                    del self._failures[next(iter(self._failures))]
                self._failures[msg_id] = count
        self._call(self.spout.fail, msg_id)
        self._fail_hooks(msg_id, emitted_at)

    def _fail_hooks(self, msg_id: Any, emitted_at: float) -> None:
        if self.hooks is not None:
            self.hooks.spout_fail(msg_id, (self.host.clock() - emitted_at) * 1000.0
                                  if emitted_at >= 0.0 else None)

    def _forget(self, msg_id: Any) -> None:
        try:
            self._failures.pop(msg_id, None)
        except TypeError:
            pass

    def _call(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - user code (sys.exit too): report, carry on
            self.host.report_error(self, e)


class BoltTask(Task):
    """Runs a bolt: ``execute`` per tuple, errors reported and the input failed."""

    kind = "bolt"

    def __init__(self, host: TaskHost, task_id: int, component: str, context: TopologyContext,
                 conf: dict, bolt: Bolt | BasicBolt, routes: dict[str, StreamRoute]) -> None:
        super().__init__(host, task_id, component, context, conf)
        self.bolt = bolt
        self.collector = OutputCollector(self, routes)
        self._basic = BasicOutputCollector(self.collector) if isinstance(bolt, BasicBolt) else None
        self.barrier: Barrier | None = None  # set by the worker when checkpoints flow here
        self._sample_every = sample_every(conf)
        self._count = 0
        # a rich bolt's opt-in ``execute_batch(tuples)``: its queued input a run at a time
        batch = getattr(bolt, "execute_batch", None) if self._basic is None else None
        self._batched: Any = batch if callable(batch) else None
        # the bound ``execute``, made once: looking it up per tuple made a method object
        # per call, about 300 instructions of each fused hop (ChainHost calls ``handle``)
        self._bound_execute: Any = getattr(bolt, "execute", None)

    def start(self) -> None:
        """Add the ``topology.auto.task.hooks``, then prepare the bolt."""
        add_auto_hooks(self.conf, self.component, self.context)
        if self._basic is not None:
            self.bolt.prepare(self.conf, self.context)  # type: ignore[call-arg]
        else:
            self.bolt.prepare(self.conf, self.context, self.collector)  # type: ignore[call-arg]
        self._bound_execute = getattr(self.bolt, "execute", None)  # prepare may have set its own

    def stop(self) -> None:
        """Clean up the bolt."""
        self._cleanup_hooks()
        try:
            self.bolt.cleanup()
        except Exception as e:  # noqa: BLE001
            self.host.report_error(self, e)

    def process(self, budget: int) -> int:
        """Handle up to ``budget`` queued tuples, in runs when the bolt has ``execute_batch``."""
        if self._batched is None:
            if type(self) is BoltTask:
                # no subclass, so no override: called through the class, compiled, these are
                # direct C calls; through ``self`` Cython looks for a Python override first,
                # and its one-entry cache misses when the tasks of a worker take turns.
                # Acks of one root in a row go to the ledger as one (``Task.send_ack``):
                # a split's words queued to one counter are acked one after another
                self._ack_hold = True
                try:
                    if self._basic is not None:
                        return BoltTask._process_basic(self, budget)
                    return BoltTask._process_rich(self, budget)
                finally:
                    self._ack_hold = False
                    Task.flush_ack(self)
            inbox = self.inbox
            popleft = self.inbox_popleft()
            n = min(budget, len(inbox))
            for _ in range(n):
                self.handle(popleft())
            return n
        return self._process_batches(budget)

    def _process_basic(self, budget: int) -> int:
        """``process`` for a ``BasicBolt``: ``handle``'s common case inlined, per tuple.

        The bolt's ``execute`` is the one bound after ``prepare``. Checkpoints, the
        tuple of each sampling interval (timed) and tuples while hooks are set take
        ``handle``, so those paths stay in one place.
        """
        inbox = self.inbox
        popleft = self.inbox_popleft()
        n = min(budget, len(inbox))
        if not n:
            return 0
        basic = self._basic
        assert basic is not None
        execute: Any = self._bound_execute
        collector = self.collector
        m = self.metrics
        every = self._sample_every
        checkpoints = self.barrier is not None  # see _process_rich
        for _ in range(n):
            tup = popleft()
            if (self.hooks is not None or (checkpoints and tup.stream == CHECKPOINT_STREAM)
                    or (every and (self._count + 1) % every == 0)):
                self.handle(tup)
                continue
            self._count += 1
            basic.input = tup
            try:
                execute(tup, basic)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - user code: fail the input
                self._basic_failed(tup, e)
            else:
                collector.ack(tup)
            finally:
                basic.input = None
            m.executed += 1
        return n

    def _process_rich(self, budget: int) -> int:
        """``process`` for a ``Bolt`` without ``execute_batch``: ``handle``'s common case inlined.

        As ``_process_basic``: the ``execute`` bound after ``prepare``; checkpoints, sampled
        tuples and tuples while hooks are set take ``handle``.
        """
        inbox = self.inbox
        popleft = self.inbox_popleft()
        n = min(budget, len(inbox))
        if not n:
            return 0
        execute: Any = self._bound_execute
        m = self.metrics
        every = self._sample_every
        # checkpoint tuples come only on an input of the checkpoint stream, which gives the
        # task its barrier (assembly.make_task): without one, no stream comparison per tuple
        checkpoints = self.barrier is not None
        for _ in range(n):
            tup = popleft()
            if (self.hooks is not None or (checkpoints and tup.stream == CHECKPOINT_STREAM)
                    or (every and (self._count + 1) % every == 0)):
                self.handle(tup)
                continue
            self._count += 1
            try:
                execute(tup)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - user code: report, fail the input
                self.host.report_error(self, e)
                self.collector.fail_with_error(tup, describe(e))
            m.executed += 1
        return n

    def _process_batches(self, budget: int) -> int:
        """Pass the queued tuples to ``execute_batch`` in runs; checkpoints end a run.

        A checkpoint tuple is handled alone, after the tuples queued before it have been
        executed, so the barrier still follows the data it marks.
        """
        inbox = self.inbox
        popleft = self.inbox_popleft()
        n = min(budget, len(inbox))
        batch: list[Tuple] = []
        checkpoints = self.barrier is not None  # see _process_rich
        for _ in range(n):
            tup = popleft()
            if checkpoints and tup.stream == CHECKPOINT_STREAM:
                if batch:
                    self.execute_batch(batch)
                    batch = []
                self._on_checkpoint_tuple(tup)
            else:
                batch.append(tup)
        if batch:
            self.execute_batch(batch)
        return n

    def execute_batch(self, batch: list[Tuple]) -> None:
        """One ``execute_batch`` call; if it raises, its inputs not yet acked or failed fail.

        The call's time is shared equally by its tuples in the execute latency and the
        hooks' ``BoltExecuteInfo``.
        """
        hooks = self.hooks
        count = len(batch)
        self._count += count
        timed = self._sample_every != 0 or hooks is not None
        t0 = fused0 = 0.0
        host = self.host
        if timed:
            t0 = host.clock()
            fused0 = host.fused_secs
            host.timing = True
            if hooks is not None:
                for tup in batch:
                    tup._t0 = t0 or 1e-9  # 0.0 means "not timed" to ack
            else:
                # the process latency of one tuple in each sampling interval
                step = self._sample_every
                for i in range(count - 1 - (self._count % step), -1, -step):
                    batch[i]._t0 = t0 or 1e-9
        try:
            self._batched(batch)
        except Exception as e:  # noqa: BLE001 - user code: report, fail the inputs left
            self.host.report_error(self, e)
            why = describe(e)
            for tup in batch:
                if not tup._done:
                    self.collector.fail_with_error(tup, why)
        m = self.metrics
        m.executed += count
        if timed:
            host.timing = False  # as in handle: the hops run in place are the downstream's
            ms = (host.clock() - t0 - (host.fused_secs - fused0)) * 1000.0
            m.record_execute(ms, count)
            for tup in batch:  # per input stream: the tuples sampled for the process latency
                if tup._t0:
                    m.sample_input(tup.component, tup.stream, EXEC_SAMPLES, ms / count)
            if hooks is not None:
                each = ms / count
                for tup in batch:
                    hooks.bolt_execute(tup, each)

    def handle(self, tup: Tuple) -> None:
        """Execute one tuple, timing a sample of executes.

        A timed execute leaves out the time of the hops its emits ran in place (a chain's
        downstream bolts, ``TaskHost.fused_secs``): those are the downstream's latency.
        """
        if _is_checkpoint(tup.stream):
            self._on_checkpoint_tuple(tup)
            return
        self._count += 1
        sample = self._sample_every and self._count % self._sample_every == 0
        hooks = self.hooks  # with hooks, every execute is timed for their info objects
        host = self.host
        timed = sample or hooks is not None
        t0 = fused0 = 0.0
        if timed:
            t0 = host.clock()
            tup._t0 = t0 or 1e-9  # 0.0 means "not timed" to ack
            fused0 = host.fused_secs
            host.timing = True
        if self._basic is not None:
            self._execute_basic(tup, fused0)
        else:
            try:
                self._bound_execute(tup)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - user code: report, fail the input
                self.host.report_error(self, e)
                self.collector.fail_with_error(tup, describe(e))
        if timed:
            host.timing = False
            t0 += host.fused_secs - fused0
        m = self.metrics
        m.executed += 1
        if sample:
            ms = (self.host.clock() - t0) * 1000.0
            m.record_execute(ms, 1)
            m.sample_input(tup.component, tup.stream, EXEC_SAMPLES, ms)  # per input stream
        if hooks is not None:
            hooks.bolt_execute(tup, (self.host.clock() - t0) * 1000.0)

    def _on_checkpoint_tuple(self, tup: Tuple) -> None:
        barrier = self.barrier
        if barrier is None:
            self.collector.ack(tup)
            return
        txid, action = tup.values
        done, superseded = barrier.add(txid, action, tup.task, tup)
        for old in superseded:  # an earlier checkpoint that never completed here
            self.collector.fail(old)
        if not done:
            return
        if self.checkpoint(txid, Action(action)):
            self.collector.emit([txid, action], anchors=done, stream=CHECKPOINT_STREAM)
            for t in done:
                self.collector.ack(t)
        else:
            for t in done:
                self.collector.fail(t)

    def checkpoint(self, txid: int, action: Action) -> bool:
        """Act on a complete checkpoint; a stateless bolt only forwards it."""
        return True

    def _execute_basic(self, tup: Tuple, fused0: float) -> None:
        basic = self._basic
        assert basic is not None
        basic.input = tup
        try:
            self._bound_execute(tup, basic)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - user code: fail the input
            self._basic_failed(tup, e)
        else:
            if tup._t0:  # timed: the hops run in place are not this bolt's process time
                tup._t0 += self.host.fused_secs - fused0
            self.collector.ack(tup)
        finally:
            basic.input = None


    def _basic_failed(self, tup: Tuple, e: BaseException) -> None:
        """A ``BasicBolt``'s execute raised ``e``: fail ``tup``, reported unless a plain FailedException."""
        if isinstance(e, FailedException) and not isinstance(e, ReportedFailedException):
            self.collector.fail(tup)
            return
        self.host.report_error(self, e)
        self.collector.fail_with_error(tup, describe(e))


class AckerTask(Task):
    """The ``__acker`` system bolt: keeps the XOR ledger and tells spouts the outcome."""

    kind = "acker"

    def __init__(self, host: TaskHost, task_id: int, component: str, context: TopologyContext,
                 conf: dict) -> None:
        super().__init__(host, task_id, component, context, conf)
        self.inline = True
        self.ledger = AckerLedger(PENDING_BUCKETS)

    def handle(self, tup: Tuple) -> None:
        """Apply one queued ledger message."""
        self.apply(tup.stream, tup.values)

    def apply(self, stream: str, v: list) -> None:
        """Apply one ledger message and forward any verdict to its spout task."""
        ledger = self.ledger
        if stream == ACK_ACKS:
            data = v[0] if len(v) == 1 else None
            if type(data) is not bytes or len(data) % 16:
                log.warning("acker %d ignores a malformed ack batch", self.task_id)
                return
            pairs = u64_array(data)
            for i in range(0, len(pairs), 2):
                self.metrics.executed += 1
                code = ledger.ack_code(pairs[i], pairs[i + 1], True)
                if code:
                    self._tell(code, pairs[i])
            return
        if stream == ACK_ACK:
            code = ledger.ack_code(v[0], v[1], True)
        elif stream == ACK_INIT:
            code = ledger.init_code(v[0], v[1], v[2])
        elif stream == ACK_FAIL:
            code = ledger.fail_code(v[0], v[1:4] if len(v) > 1 else None)
        elif stream == ACK_RESET:
            code = ledger.reset_code(v[0])
        else:
            log.warning("acker %d ignores tuple on stream %r", self.task_id, stream)
            return
        self.metrics.executed += 1
        if code:
            self._tell(code, v[0])

    def on_ack(self, root: int, value: int) -> None:
        """An ack from a task of this worker (the hottest ledger message, taken directly)."""
        self.metrics.executed += 1
        code = self.ledger.ack_code(root, value, False)
        if code:
            self._tell(code, root)

    def on_init(self, root: int, value: int, spout_task: int) -> None:
        """An init from a spout task of this worker, taken directly (no message list)."""
        self.metrics.executed += 1
        code = self.ledger.init_code(root, value, spout_task)
        if code:
            self._tell(code, root)

    def _tell(self, code: int, root: int) -> None:
        """Send the ledger's verdict ``code`` on ``root`` to its spout task."""
        ledger = self.ledger
        if code == ACKED:
            self.host.verdict(ledger.task, self, root)
        elif code == FAILED_TREE:
            detail = ledger.detail or (None, None, None)
            self.host.deliver(ledger.task, self, ACK_FAIL, [root, *detail], None)
        else:
            self.host.deliver(ledger.task, self, ACK_RESET, [root], None)

    def expire(self) -> int:
        """Drop roots older than the message timeout (their spouts fail them)."""
        return self.ledger.rotate()
