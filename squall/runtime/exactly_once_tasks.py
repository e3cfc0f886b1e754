"""Spout and bolt tasks in exactly-once mode (``topology.guarantee: exactly_once``).

A spout task takes the checkpoint tuples of ``$checkpointspout`` itself:

- PREPARE(t): stages ``spout.position()`` in its own state namespace, sets the msg ids
  emitted since the last barrier aside for t, and emits the barrier on ``$checkpoint``
  (anchored to the checkpoint tuple) behind the records emitted before it;
- COMMIT(t): commits that state and calls ``spout.ack`` for every msg id of the
  transactions up to t (a record is acked once the checkpoint covering it commits);
- ROLLBACK and INITSTATE: roll the state back and ``seek`` the spout to the committed
  position (or to where it stood at open when nothing was ever committed); the msg ids
  not committed are forgotten, never failed: the spout reads them again.

Its emits are not tracked by the ackers (no ack-init, no timeout); a spout task emits
nothing until a recovery barrier (INITSTATE or ROLLBACK) has passed through it. A failure on
the spout's side (an exception out of ``next_tuple``, an emit that raised, or the spout's
own ``collector.fail_next_prepare(reason)``) fails its next PREPARE, since its position may
be past a record that never left it: the rollback that follows seeks it back.

A bolt task aligns barriers (``exactly_once.Alignment``), and a failed data tuple (``fail``,
``FailedException``, an exception raised in ``execute``) fails the next PREPARE, which the
checkpoint spout answers with a ROLLBACK. A stateful bolt that has already initialised
takes INITSTATE as a ROLLBACK: after a restart of any part of the topology every task
returns to the last commit, survivors included.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

from squall.api.components import SeekableSpout
from squall.api.tuple import DEFAULT_STREAM, Tuple
from squall.runtime.checkpoint import CHECKPOINT_STREAM, Action
from squall.runtime.collectors import OutputCollector, SpoutOutputCollector
from squall.runtime.exactly_once import POSITION_KEY, Alignment
from squall.runtime.exactly_once_checks import MAX_PENDING_KEY, rescale_refusal
from squall.runtime.exactly_once_poison import PoisonWatch
from squall.runtime.stateful import (
    StatefulBoltTask,
    StatefulOutputCollector,
    close_state,
)
from squall.runtime.tasks import BoltTask, SpoutTask

log = logging.getLogger("squall.exactly_once")

# topology.max.spout.pending's default in this mode (squall.exactly_once.max.spout.pending)
DEFAULT_MAX_PENDING = 100_000

_UNREAD = object()  # the spout's position at open could not be read


class UntrackedSpoutCollector(SpoutOutputCollector):
    """A spout's collector in exactly-once mode: no acker; msg ids wait for their commit."""

    def __init__(self, task: Any, routes: dict, pending: Any) -> None:
        super().__init__(task, routes, pending)
        self.since_barrier: list[Any] = []  # msg ids emitted since the last PREPARE

    def emit(self, values: list, stream: str = DEFAULT_STREAM, msg_id: Any = None) -> list[int]:
        """Emit ``values`` untracked; ``msg_id`` is acked when its checkpoint commits.

        An emit that raises fails the spout's next PREPARE (``fail_next_prepare``): the
        spout's position may already be past the record, which no acker will replay.
        """
        try:
            targets = SpoutOutputCollector.emit(self, values, stream, None)
        except BaseException as e:
            self.fail_next_prepare(f"an emit on {stream!r} raised {type(e).__name__}: {e}")
            raise
        if msg_id is not None:
            self.since_barrier.append(msg_id)
        return targets

    def emit_direct(self, task: int, values: list, stream: str = DEFAULT_STREAM,
                    msg_id: Any = None) -> None:
        """Emit on a direct stream, untracked (as ``emit``)."""
        try:
            SpoutOutputCollector.emit_direct(self, task, values, stream, None)
        except BaseException as e:
            self.fail_next_prepare(f"an emit on {stream!r} raised {type(e).__name__}: {e}")
            raise
        if msg_id is not None:
            self.since_barrier.append(msg_id)

    def fail_next_prepare(self, reason: str) -> None:
        """Fail the task's next PREPARE, so a rollback seeks the spout back before anything commits.

        For a spout that knows its position moved past a record it could not deliver (a
        translator error it retries later, a refused seek): ``getattr(collector,
        "fail_next_prepare", None)`` is there only in exactly-once mode. An exception out
        of ``next_tuple`` and an emit that raised call it by themselves.
        """
        task: Any = self._task
        if task.slipped is None:
            task.slipped = reason


class ExactlyOnceSpoutTask(SpoutTask):
    """Runs a ``SeekableSpout`` whose position travels in the checkpoints (module docs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        routes = self.collector._routes
        self.collector = UntrackedSpoutCollector(self, routes, self.pending)
        self._ack_soon = self.collector.acks_soon
        self._fail_soon = self.collector.fails_soon
        self.barriers = OutputCollector(self, routes)  # emits the barrier anchored, acks its input
        self.recovered = False  # a recovery barrier passed since the task started
        self.opened_at: Any = _UNREAD
        self.state: Any = None
        self.uncommitted: dict[int, list[Any]] = {}  # txid -> msg ids that PREPARE covered
        # why the next PREPARE must fail (the position may be past an undelivered record);
        # cleared by the seek of a recovery barrier
        self.slipped: str | None = None
        # submit refused any other (exactly_once_checks): the spout can say and set its place
        self.seekable: SeekableSpout = self.spout  # type: ignore[assignment]
        if self.max_pending is None:
            # what a bolt holds for alignment is bounded only by what the spouts emit past a
            # barrier: never unbounded in this mode (RELIABILITY E24)
            self.max_pending = int(self.conf.get(MAX_PENDING_KEY) or DEFAULT_MAX_PENDING)

    def start(self) -> None:
        """Open the spout and note where it stands: the position when nothing was committed."""
        super().start()
        try:
            self.opened_at = self.seekable.position()
        except Exception as e:  # noqa: BLE001 - user code: reported; recovery fails until fixed
            self.host.report_error(self, e)

    def can_emit(self) -> bool:
        """After the first recovery barrier (the position is settled), below max pending.

        A record is pending here until the checkpoint covering it commits (its ``ack``), so
        ``topology.max.spout.pending`` bounds the msg ids emitted and not yet committed: the
        records a spout task may run ahead of its last commit.
        """
        if not (self.recovered and self.active):
            return False
        limit = self.max_pending
        if limit is None:
            return True
        waiting = len(self.collector.since_barrier)  # type: ignore[attr-defined]
        for ids in self.uncommitted.values():
            waiting += len(ids)
        return waiting < limit

    def next_tuple_raised(self, error: BaseException) -> None:
        """An exception out of the spout's ``next_tuple`` fails the next PREPARE, and is reported."""
        self.collector.fail_next_prepare(  # type: ignore[attr-defined]
            f"next_tuple raised {type(error).__name__}: {error}")
        self.host.report_error(self, error)

    def frames_lost(self, reason: str) -> None:
        """Frames to or from this task were lost between live workers (``Transfer.lost_frames``)."""
        self.collector.fail_next_prepare(reason)  # type: ignore[attr-defined]

    def handle(self, tup: Tuple) -> None:
        """Checkpoint tuples here; acker verdicts (only of system streams) as any spout."""
        if tup.stream == CHECKPOINT_STREAM:
            self.on_checkpoint(tup)
        else:
            SpoutTask.handle(self, tup)

    def on_checkpoint(self, tup: Tuple) -> None:
        """Act on one checkpoint tuple, then forward it (or fail it: the spout recovers)."""
        txid, action = tup.values
        try:
            ok = self.act(txid, Action(action))
        except Exception as e:  # noqa: BLE001 - user code and stores: report, fail the checkpoint
            self.host.report_error(self, e)
            ok = False
        if ok:
            self.barriers.emit([txid, action], anchors=tup, stream=CHECKPOINT_STREAM)
            self.barriers.ack(tup)
        else:
            self.barriers.fail(tup)

    def act(self, txid: int, action: Action) -> bool:
        """PREPARE, COMMIT, or go back to the committed position; False fails the checkpoint."""
        collector: UntrackedSpoutCollector = self.collector  # type: ignore[assignment]
        state = self.open_state()
        if action is Action.PREPARE:
            if not self.recovered:
                return False  # started since the last checkpoint: recover first
            if self.slipped is not None:
                log.warning("spout %r task %s fails PREPARE %d: %s; rolling back", self.component,
                            self.task_id, txid, self.slipped)
                return False  # the position may be past a record never delivered
            state.put(POSITION_KEY, self.seekable.position())
            state.prepare_commit(txid)
            self.uncommitted[txid] = collector.since_barrier
            collector.since_barrier = []
        elif action is Action.COMMIT:
            state.commit(txid)
            for t in sorted(t for t in self.uncommitted if t <= txid):
                for msg_id in self.uncommitted.pop(t):
                    self.ack_committed(msg_id)
        else:
            state.rollback()
            position = state.get(POSITION_KEY)
            if position is None:
                if self.opened_at is _UNREAD:
                    raise RuntimeError(f"spout {self.component!r} task {self.task_id}: its "
                                       f"position() failed at open, so it cannot seek back")
                position = self.opened_at
            elif not self.recovered:
                self.tell_committed(position)
            self.slipped = None  # before the seek: a seek that fails its way sets it again
            self.seekable.seek(position)
            self.uncommitted.clear()  # read again after the seek: never failed
            collector.since_barrier = []
            self.recovered = True
        return True

    def open_state(self) -> Any:
        """The task's own state (its committed position); checked on first open.

        Spout states have generations as bolts' do (``stateful.open_task_state``): when
        the spout's task count changed, each new task's position is merged by the spout's
        ``merge_positions`` from the previous generation's committed positions.
        """
        if self.state is None:
            from squall.runtime.stateful import (
                check_recovered,
                committed_items,
                needs_move,
                previous_states,
                task_generation,
            )
            from squall.state import load_provider

            ctx = self.context
            provider = load_provider(self.conf)
            history, state = task_generation(provider, self.conf, ctx)
            if switched_to_exactly_once(provider, self.conf, ctx, state):
                # the name ran at-least-once since its last exactly-once checkpoint (or
                # never ran exactly-once): no position in the store is the source's truth,
                # which its own progress (offsets, progress files) is: start from there
                log.info("spout %r task %s: the topology ran at-least-once before; reading from "
                         "where the source's own progress stands", self.component, self.task_id)
                if state.get(POSITION_KEY) is not None:
                    state.delete(POSITION_KEY)
                state.commit((state.committed_txid() or 0) + 1)
            elif needs_move(history, state):
                merge = getattr(self.spout, "merge_positions", None)
                if merge is None:
                    raise RuntimeError(rescale_refusal(self.component, history[-2], history[-1]))
                old = [dict(committed_items(s)).get(POSITION_KEY)
                       for s in previous_states(provider, self.conf, ctx, history)]
                if any(p is not None for p in old):
                    state.put(POSITION_KEY, merge(old, ctx.get_this_task_index(), history[-1]))
                state.commit(0)
            check_recovered(state, self.conf, ctx)
            self.state = state
        return self.state

    def tell_committed(self, position: Any) -> None:
        """A (re)started task's first recovery: the spout's ``committed(position)``.

        The msg ids of the last commit may have died with the previous process (killed
        between its PREPARE and COMMIT), so their ``ack`` never comes; the spout commits
        at its source from the position instead. An error is reported, not fatal: the
        records are committed in the checkpoint either way.
        """
        hook = getattr(self.seekable, "committed", None)
        if hook is None:
            return
        try:
            hook(position)
        except Exception as e:  # noqa: BLE001 - user code: reported, the recovery goes on
            self.host.report_error(self, e)

    def ack_committed(self, msg_id: Any) -> None:
        """The checkpoint covering ``msg_id`` committed: the spout's ``ack``."""
        self.metrics.acked += 1
        self._call(self.spout.ack, msg_id)
        if self.hooks is not None:
            self.hooks.spout_ack(msg_id, 0.0)

    def stop(self) -> None:
        """Close the spout, then release the state's connections."""
        super().stop()
        close_state(self)


def switched_to_exactly_once(provider: Any, conf: dict, context: Any, state: Any) -> bool:
    """Whether the checkpoint record was last saved under another guarantee than exactly-once.

    A record saved by an older squall has no guarantee: it counts as switched only when the
    task has no committed position (its spout never ran exactly-once under this name).
    """
    from squall.runtime.checkpoint import CHECKPOINT_SPOUT
    from squall.runtime.checkpoint_spout import GUARANTEE_KEY, ORIGIN_KEY, RECORD_KEY, ever_committed
    from squall.runtime.exactly_once import EXACTLY_ONCE

    meta: Any = provider.new_state(f"{context.topology_name}/{CHECKPOINT_SPOUT}", conf, context)
    record = meta.get(RECORD_KEY)
    if not ever_committed(record, meta.get(ORIGIN_KEY)):
        return False
    guarantee = meta.get(GUARANTEE_KEY)
    if guarantee is None:
        return state.committed_txid() is None and state.prepared_txid() is None
    return guarantee != EXACTLY_ONCE


class _FailureWatch:
    """A bolt collector's ``fail`` of a data tuple also marks the task as recovering."""

    _task: Any

    def fail_with_error(self, tup: Tuple, error: str | None) -> None:
        """Fail ``tup``; a data tuple's failure fails the task's next PREPARE.

        A record that failed ``topology.exactly_once.max.replays`` times is a poison
        record (``exactly_once_poison``): given up under ``dead_letter``, so acked instead.
        """
        if not tup._done and tup.stream != CHECKPOINT_STREAM and not tup.is_tick():
            task = self._task
            if task.poison.failed(tup, error):
                self.ack(tup)  # type: ignore[attr-defined]
                return
            task.alignment.fail_data()
        super().fail_with_error(tup, error)  # type: ignore[misc]


class WatchedCollector(_FailureWatch, OutputCollector):
    """A bolt's collector in exactly-once mode."""


class WatchedStatefulCollector(_FailureWatch, StatefulOutputCollector):
    """A stateful bolt's collector in exactly-once mode."""


class _Aligned:
    """What a bolt task does differently in exactly-once mode (mixed into its task class)."""

    _fast_process: Any = None  # the base class's loop over data only, where it has one
    alignment: Alignment
    poison: PoisonWatch
    barrier: Any
    collector: Any
    inbox: Any
    _batched: Any

    def process(self, budget: int) -> int:
        """Handle up to ``budget`` queued tuples; data waits or goes as the alignment says."""
        inbox = self.inbox
        n = min(budget, len(inbox))
        fast = self._fast_process
        alignment = self.alignment
        if fast is not None and alignment.key is None and not alignment.recovering:
            # no barrier aligning: the data before the next checkpoint tuple all runs, so
            # the task's own (compiled) loop takes it
            k = 0
            for tup in itertools.islice(inbox, n):
                if tup.stream == CHECKPOINT_STREAM:
                    break
                k += 1
            if k:
                return fast(self, k) + (self.process(n - k) if k < n else 0)
        admit = alignment.admit
        run: list[Tuple] = []
        for _ in range(n):
            tup = inbox.popleft()
            if tup.stream == CHECKPOINT_STREAM:
                if run:
                    self.run(run)
                    run = []
                self._on_checkpoint_tuple(tup)
            elif tup.is_tick() or admit(tup.task, tup):
                run.append(tup)
        if run:
            self.run(run)
        return n

    def frames_lost(self, reason: str) -> None:
        """Frames to or from this task were lost between live workers: fail the next PREPARE."""
        if not self.alignment.recovering:
            log.warning("task %s fails its next PREPARE: %s", getattr(self, "task_id", "?"), reason)
        self.alignment.fail_data()

    def handle(self, tup: Tuple) -> None:
        """One tuple, as ``process`` does it."""
        if tup.stream == CHECKPOINT_STREAM:
            self._on_checkpoint_tuple(tup)
        elif tup.is_tick() or self.alignment.admit(tup.task, tup):
            self.run([tup])

    def run(self, tuples: list[Tuple]) -> None:
        """Execute admitted data tuples, in order (in runs for an ``execute_batch`` bolt)."""
        if self._batched is not None:
            self.execute_batch(tuples)  # type: ignore[attr-defined]
            return
        execute = super().handle  # type: ignore[misc]
        for tup in tuples:
            execute(tup)

    def _on_checkpoint_tuple(self, tup: Tuple) -> None:
        barrier = self.barrier
        collector = self.collector
        txid, action = tup.values
        key = (txid, action, barrier.emission(tup))
        done, superseded = barrier.add(txid, action, tup.task, tup)
        for old in superseded:  # an earlier checkpoint that never completed here
            collector.fail(old)
        if any(old is tup for old in superseded):
            return  # a late copy of a checkpoint that is over here
        alignment = self.alignment
        alignment.arrive(key, action, tup.task)
        if not done:
            return
        act = Action(action)
        ok = not (act is Action.PREPARE and alignment.recovering) and self.checkpoint(txid, act)  # type: ignore[attr-defined]
        held = alignment.complete(ok)
        if ok and act is Action.COMMIT:
            self.poison.committed(txid)
        if ok:
            collector.emit([txid, action], anchors=done, stream=CHECKPOINT_STREAM)
            for t in done:
                collector.ack(t)
        else:
            for t in done:
                collector.fail(t)
        if held:
            self.run(held)


class AlignedBoltTask(_Aligned, BoltTask):
    """A bolt task in exactly-once mode."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.alignment = Alignment()
        self.poison = PoisonWatch(self, self.conf)
        self.collector = WatchedCollector(self, self.collector._routes)
        if self._basic is not None:
            from squall.runtime.collectors import BasicOutputCollector

            self._basic = BasicOutputCollector(self.collector)
        # BoltTask's loops take checkpoint tuples to ``handle`` (here: the alignment); they
        # are given only the data queued before the next one
        if self._batched is not None:
            self._fast_process = BoltTask._process_batches
        elif self._basic is not None:
            self._fast_process = BoltTask._process_basic
        else:
            self._fast_process = BoltTask._process_rich


class AlignedStatefulBoltTask(_Aligned, StatefulBoltTask):
    """A stateful bolt task (or aligned sink) in exactly-once mode."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.alignment = Alignment()
        self.poison = PoisonWatch(self, self.conf)
        self.collector = WatchedStatefulCollector(self, self.collector._routes)

    def checkpoint(self, txid: int, action: Action) -> bool:
        """As a stateful bolt's, but INITSTATE also takes a running task back to its commit."""
        if action is Action.INITSTATE:
            if self.initialized:
                action = Action.ROLLBACK
            else:
                # what came between a ROLLBACK and this INITSTATE is read again after it
                self.alignment.dropped += len(self.buffered)
                self.buffered = []
        return StatefulBoltTask.checkpoint(self, txid, action)


def aligned(cls: type[BoltTask]) -> type[BoltTask]:
    """The exactly-once task class for bolt task class ``cls``."""
    if cls is StatefulBoltTask:
        return AlignedStatefulBoltTask
    if cls is BoltTask:
        return AlignedBoltTask
    raise TypeError(f"{cls.__name__} cannot run in exactly-once mode")
