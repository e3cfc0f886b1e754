"""A live rescale of a spout: its tasks hand over to a new set of tasks while the rest runs.

Every task of the spout is replaced (the new tasks get new ids, so a retiring task keeps its
own id while it finishes: acker verdicts and checkpoint tuples for it still reach it), and
each new task opens a fresh instance of the spout that sees the new task count. No other
task or worker is replaced.

Exactly-once (``SpoutSchedule``, ``SpoutHandover``, ``SpoutTakeover``): the switch rides
checkpoint ``T``. The checkpoint spout sends ``PREPARE(T)`` and ``COMMIT(T)`` to the old
tasks only: each stages its position at ``PREPARE(T)`` and emits nothing after it, commits
it at ``COMMIT(T)`` (acking its records at the source) and closes its spout. The first
barrier after ``COMMIT(T)`` goes to the new tasks only (the checkpoint spout starts it once
``COMMIT(T)`` completed everywhere, so every old position of ``T`` is committed): each new
task then opens its state in a new generation, whose position the spout's
``merge_positions`` makes from the old tasks' (``ExactlyOnceSpoutTask.open_state``), seeks
there, and starts emitting. The spout's downstream barriers expect the old tasks' copies up
to ``COMMIT(T)`` and the new tasks' after (``live_keyed.MovingBarrier``). If ``T`` rolls
back, the old tasks seek back to ``T - 1`` and go on; the new ones are removed.

At-least-once: the old tasks stop calling ``next_tuple`` and drain: the trees they have
pending complete or fail (a failure goes to the spout's ``fail`` as always; the spout's
source replays it when the split's new owner reads from the source's own progress, which
does not pass an unacked record), bounded by twice ``topology.message.timeout.secs``. Then
they close, and the new tasks start emitting (``DrainedHandover``, run by a timer of each
worker concerned).

On Spark the master drives the move by commands (``spark.live_move.rescale_spout`` and
``drain_spout``); each worker runs the steps at the end of this module on its loop thread.
Exactly-once: ``pin_views``, ``arm_spout`` (the hooks above, the moving barriers and the
checkpoint spout's switching route, derived from the worker's two plans), ``spout_statuses``
and ``end_spout``. At-least-once: ``pin_views``, ``stop_spout`` (the old tasks here stop
emitting), ``drain_step`` (polled: the drained ones close and retire) and, once no old task
is left on any worker, ``start_spout`` (the new ones here start).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from squall.api.topology import StormTopology
from squall.api.tuple import Tuple
from squall.runtime import live
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM, Action
from squall.runtime.host import Task
from squall.runtime.live_keyed import MoveSchedule, MovingBarrier, SwitchRouter, plain_barriers
from squall.runtime.plan import Executor, TaskPlan

THREADED = "squall.task.threaded"


def spout_plan(plan: TaskPlan, comp: str, count: int) -> TaskPlan:
    """The plan after ``comp`` goes to ``count`` tasks, every one new: ids above every id in use.

    Each new task is an executor of its own on the worker that hosts the fewest of the old
    and new tasks of ``comp`` placed so far (then the fewest tasks, then the lowest index).
    """
    old = set(plan.component_tasks[comp])
    worker_executors = [[ex for ex in exs if ex.component != comp] for exs in plan.worker_executors]
    seen = [[ex for ex in exs if ex.component == comp] for exs in plan.worker_executors]
    next_id = max(plan.task_component) + 1
    tasks = list(range(next_id, next_id + count))
    for task in tasks:
        def load(w: int) -> tuple[int, int, int]:
            exs = worker_executors[w] + seen[w]
            return (sum(len(ex.tasks) for ex in exs if ex.component == comp),
                    sum(len(ex.tasks) for ex in exs), w)
        w = min(range(len(worker_executors)), key=load)
        worker_executors[w].append(Executor(comp, (task,)))
    component_tasks = {c: (tasks if c == comp else list(ts)) for c, ts in plan.component_tasks.items()}
    task_component = {t: c for t, c in plan.task_component.items() if t not in old}
    task_component.update((t, comp) for t in tasks)
    return replace(plan, component_tasks=component_tasks, task_component=task_component,
                   executors=[ex for exs in worker_executors for ex in exs],
                   worker_executors=worker_executors, worker_hosts=list(plan.worker_hosts),
                   worker_resources=list(plan.worker_resources))


class SpoutSchedule(MoveSchedule):
    """``MoveSchedule`` for a spout: ``COMMIT(T)`` goes to the old tasks only.

    A new task has nothing to commit at ``T``, and must not read the old positions before
    every old task committed them: it starts at the first barrier after ``COMMIT(T)``.
    """

    def copy(self) -> SpoutSchedule:
        """A fresh copy for another task."""
        return SpoutSchedule(self.txid, self.old, self.new)

    def targets(self, txid: int, action: str) -> list[int]:
        """The spout's tasks that get ``(txid, action)`` (call after ``see``)."""
        if self.rolled_back or txid <= self.txid:
            return self.old
        return self.new


class SpoutHandover:
    """An old exactly-once spout task's part: stop after ``PREPARE(T)``, close after ``COMMIT(T)``."""

    def __init__(self, task: Any, schedule: SpoutSchedule, retire: Callable[[], Any] | None = None) -> None:
        self.task = task
        self.schedule = schedule
        self.retire = retire  # asks its worker to put a ``RetiredSpout`` in its place
        self.stopped_at: float | None = None  # when it last emitted (host clock)
        self.closed = False
        self.failed: str | None = None
        self.own = task.on_checkpoint

    @property
    def done(self) -> bool:
        """Its position of ``T`` is committed and its spout closed, or ``T`` rolled back."""
        return self.closed or self.failed is not None

    def install(self) -> None:
        """Hook the task's checkpoint handling (on its worker's loop thread)."""
        self.task.on_checkpoint = self.on_checkpoint

    def uninstall(self) -> None:
        """Give the task back its own checkpoint handling."""
        self.task.__dict__.pop("on_checkpoint", None)

    def on_checkpoint(self, tup: Tuple) -> None:
        """The task's own handling, with the move's steps around it."""
        txid, action = tup.values
        what = self.schedule.see(txid, str(action))
        task = self.task
        if what == "rolled_back" or self.schedule.rolled_back:
            if self.failed is None:
                self.failed = f"checkpoint {self.schedule.txid} rolled back"
                # its rollback seeks it back to T - 1 and lets it emit again; marked recovered
                # first, so that is not taken for a restarted task's first recovery
                task.recovered = True
            self.own(tup)
            return
        if self.closed:  # nothing is routed here after COMMIT(T): a stray copy fails
            task.barriers.fail(tup)
            return
        self.own(tup)
        if what == "switch" and task.recovered and task.slipped is None and txid in task.uncommitted:
            task.recovered = False  # emits nothing past T's position: can_emit is False
            self.stopped_at = task.host.clock()
        elif what == "commit" and task.state is not None and task.state.committed_txid() == txid:
            self.closed = True
            task.stop()  # the source commits what T acked; Kafka releases its partitions
            if self.retire is not None:
                self.retire()


class SpoutTakeover:
    """A new exactly-once spout task's part: at its first barrier, take the merged position."""

    def __init__(self, task: Any, schedule: SpoutSchedule) -> None:
        self.task = task
        self.schedule = schedule
        self.started_at: float | None = None
        self.own = task.on_checkpoint

    @property
    def done(self) -> bool:
        """It has recovered from its merged position (it emits from there)."""
        return bool(self.task.recovered)

    def install(self) -> None:
        """Hook the task's checkpoint handling (on its worker's loop thread)."""
        self.task.on_checkpoint = self.on_checkpoint

    def uninstall(self) -> None:
        """Give the task back its own checkpoint handling."""
        self.task.__dict__.pop("on_checkpoint", None)

    def on_checkpoint(self, tup: Tuple) -> None:
        """Recover first (merge and seek) when the first barrier is a PREPARE, then as the task."""
        txid, action = tup.values
        self.schedule.see(txid, str(action))
        task = self.task
        if not task.recovered and str(action) == Action.PREPARE.value:
            try:
                # as a recovery: the new generation's position, merged from the old tasks'
                # committed at T, is sought (and told to the spout's ``committed``)
                task.act(txid, Action.INITSTATE)
            except Exception as e:  # noqa: BLE001 - the PREPARE fails and a rollback recovers
                task.host.report_error(task, e)
        self.own(tup)
        if task.recovered and self.started_at is None:
            self.started_at = task.host.clock()


class RetiredSpout(Task):
    """Stands where a removed spout task was: late checkpoint tuples fail, the rest is dropped."""

    kind = "retired"

    def __init__(self, task: Any) -> None:
        super().__init__(task.host, task.task_id, task.component, None, task.conf)  # type: ignore[arg-type]
        self.inbox = task.inbox
        self.metrics = task.metrics
        self.owner = task.owner
        barriers = getattr(task, "barriers", None)
        self._fail = None if barriers is None else barriers.fail
        self.dropped = 0  # acker verdicts that came too late for the spout (past the drain)

    def handle(self, tup: Tuple) -> None:
        """Fail a checkpoint tuple (its checkpoint rolls back); an acker's verdict has no spout now."""
        if tup.stream == CHECKPOINT_STREAM:
            if self._fail is not None:
                self._fail(tup)
        elif not tup.is_tick():
            self.dropped += 1


def drained(task: Any) -> bool:
    """An at-least-once spout task has no tree pending."""
    return len(task.pending) == 0


def retire_here(worker: Any, ids: list[int], close: bool = False) -> None:
    """Put a ``RetiredSpout`` where each of ``ids`` is (``close``: close its spout first).

    Runs on ``worker``'s loop between rounds (a command or a timer).
    """
    for task_id in ids:
        task = worker.tasks[task_id]
        if isinstance(task, RetiredSpout):
            continue
        if close:
            task.stop()
        retired = RetiredSpout(task)
        worker.tasks[task_id] = retired
        worker._appends[task_id] = retired.inbox.append
    live._place(worker)


class DrainedHandover:
    """At-least-once: the old tasks drain and close, then the new tasks start (module docs).

    Shared by the workers (threads of one process); each runs ``step`` from a timer of its
    loop, so nothing waits for the cluster to look.
    """

    def __init__(self, old: list[int], deadline: float) -> None:
        self.lock = threading.Lock()
        self.left = set(old)  # old tasks not yet closed
        self.deadline = deadline
        self.started: set[int] = set()  # workers whose new tasks started
        self.started_at = 0.0

    def step(self, worker: Any, old: list[int], new: list[int]) -> bool:
        """Close and retire this worker's drained old tasks; start its new ones once none is left.

        True once this worker's part is over (its old tasks closed, its new ones started).
        """
        now = float(worker.clock())
        for task_id in old:
            with self.lock:
                if task_id not in self.left:
                    continue
            task = worker.tasks[task_id]
            if task.active:  # the topology was activated meanwhile: it still emits nothing
                task.deactivate()
            if drained(task) or now >= self.deadline:
                retire_here(worker, [task_id], close=True)
                with self.lock:
                    self.left.discard(task_id)
        with self.lock:
            ready = not self.left and new and worker.index not in self.started
        if ready:
            if worker.active:
                for task_id in new:
                    worker.tasks[task_id].activate()
            with self.lock:
                self.started.add(worker.index)
                self.started_at = max(self.started_at, now)
        with self.lock:
            return not (self.left & set(old)) and (not new or worker.index in self.started)

    def done(self, workers: set[int]) -> bool:
        """Every old task closed, and the new tasks of each of ``workers`` started."""
        with self.lock:
            return not self.left and workers <= self.started


# ---- the per-worker steps of an exactly-once move on Spark (on the worker's loop thread) -----


class WorkerSpoutMove:
    """One worker's part of an exactly-once spout move: its hooks and the tasks it rewired."""

    def __init__(self, component: str, old: list[int], count: int) -> None:
        self.component = component
        self.old = old  # the spout's old task ids here (they retire)
        self.count = count  # the spout's old task count (the downstream barriers' copies)
        self.handovers: list[SpoutHandover] = []
        self.takeovers: list[SpoutTakeover] = []
        self.upstream: list[int] = []  # checkpoint spout tasks (their route to the spout)
        self.downstream: list[int] = []  # tasks counting the spout's barriers


def pin_views(worker: Any, comp: str, old: TaskPlan) -> None:
    """The old tasks of ``comp`` here keep the view of ``old``: their index and task count."""
    for task_id in old.component_tasks[comp]:
        task = worker.tasks.get(task_id)
        if task is not None and task.context is not None:
            task.context._plan = old


def arm_spout(worker: Any, comp: str, old: TaskPlan, new: TaskPlan, topology: StormTopology,
              txid: int) -> WorkerSpoutMove:
    """Hook ``comp``'s old and new tasks here, the barriers after it and the checkpoint route.

    Kept as ``worker.spout_move``. Call once the checkpoint spout is held (nothing in flight)
    and ``worker`` learned ``new`` (its new tasks made).
    """
    old_tasks, new_tasks = old.component_tasks[comp], new.component_tasks[comp]
    schedule = SpoutSchedule(txid, old_tasks, new_tasks)
    part = WorkerSpoutMove(comp, [t for t in old_tasks if t in worker.tasks], len(old_tasks))
    for task_id in part.old:
        def retire(task_id: int = task_id) -> None:  # mid-round: the swap waits for the next call
            worker.call(partial(retire_here, worker, [task_id]))
        h = SpoutHandover(worker.tasks[task_id], schedule.copy(), retire)
        h.install()
        part.handovers.append(h)
    for task_id in new_tasks:
        if task_id in worker.tasks:
            t = SpoutTakeover(worker.tasks[task_id], schedule.copy())
            t.install()
            part.takeovers.append(t)
    downstream = {c for c, spec in topology.components.items()
                  if any(i.component == comp and i.stream == CHECKPOINT_STREAM for i in spec.inputs)}
    for task_id, task in worker.tasks.items():
        if task.component in downstream and getattr(task, "barrier", None) is not None:
            part.downstream.append(task_id)
            barrier = task.barrier
            task.barrier = MovingBarrier(barrier, schedule.copy(), barrier.expected - len(old_tasks))
    subs = [s for s, g in topology.subscribers(CHECKPOINT_SPOUT, CHECKPOINT_STREAM) if g.kind != "direct"]
    for task_id, task in worker.tasks.items():
        if task.component != CHECKPOINT_SPOUT:
            continue
        part.upstream.append(task_id)
        route = task.collector._routes[CHECKPOINT_STREAM]
        for i, sub in enumerate(subs):
            if sub == comp:
                route.routers[i] = SwitchRouter(schedule.copy(), None)
        route.single = route.routers[0] if len(route.routers) == 1 else None
    worker.spout_move = part
    return part


def spout_statuses(worker: Any) -> list[tuple[bool, str | None, str, float | None]]:
    """(done, failed, "stop" or "start", when: wall clock) of each hooked task here."""
    part: WorkerSpoutMove | None = getattr(worker, "spout_move", None)
    if part is None:
        return []
    # the hooks note the host clock; the master compares workers' times, so wall clock
    shift = time.time() - float(worker.clock())
    out: list[tuple[bool, str | None, str, float | None]] = [
        (h.done, h.failed, "stop", None if h.stopped_at is None else h.stopped_at + shift)
        for h in part.handovers]
    out += [(t.done, None, "start", None if t.started_at is None else t.started_at + shift)
            for t in part.takeovers]
    return out


class WorkerSpoutDrain:
    """One worker's part of an at-least-once spout move: its old tasks draining, its new ones."""

    def __init__(self, old: list[int], new: list[int], deadline: float) -> None:
        self.old = old  # the spout's old task ids here
        self.left = list(old)  # not yet closed and retired
        self.new = new  # the spout's new task ids here (started once no old task is left anywhere)
        self.deadline = deadline  # host clock: past it, a task closes with trees still pending


def _wall(worker: Any, at: float) -> float:
    """``at`` (the worker's host clock) as wall clock: the master compares workers' times."""
    return at + time.time() - float(worker.clock())


def stop_spout(worker: Any, comp: str, old: TaskPlan, new: TaskPlan) -> float:
    """At-least-once: ``comp``'s old tasks here stop calling ``next_tuple``; when (wall clock).

    Kept as ``worker.spout_drain``; the drain is bounded by twice the message timeout.
    """
    timeout = float(worker.conf.get("topology.message.timeout.secs") or 30)
    now = float(worker.clock())
    part = WorkerSpoutDrain([t for t in old.component_tasks[comp] if t in worker.tasks],
                            [t for t in new.component_tasks[comp] if t in worker.tasks], now + 2 * timeout)
    for task_id in part.old:
        worker.tasks[task_id].deactivate()  # no next_tuple; the spout commits what is acked so far
    worker.spout_drain = part
    return _wall(worker, now)


def drain_step(worker: Any) -> int:
    """Close and retire the old tasks here that drained (or ran out of time); how many are left."""
    part: WorkerSpoutDrain | None = getattr(worker, "spout_drain", None)
    if part is None:
        return 0
    now = float(worker.clock())
    for task_id in list(part.left):
        task = worker.tasks[task_id]
        if task.active:  # the topology was activated meanwhile: it still emits nothing
            task.deactivate()
        if drained(task) or now >= part.deadline:
            retire_here(worker, [task_id], close=True)
            part.left.remove(task_id)
    return len(part.left)


def start_spout(worker: Any) -> float | None:
    """The new tasks here start emitting (the topology active); when (wall clock), or None."""
    part: WorkerSpoutDrain | None = getattr(worker, "spout_drain", None)
    if part is None or not part.new:
        return None
    if part.left:
        raise RuntimeError(f"the spout's old tasks {part.left} here have not drained")
    if worker.active:
        for task_id in part.new:
            worker.tasks[task_id].activate()
    return _wall(worker, float(worker.clock()))


def end_spout(worker: Any, failed: str | None, new_ids: list[int], plan: TaskPlan,
              topology: StormTopology) -> None:
    """Take the hooks off and make routes and barriers plain again under ``plan``.

    The old tasks retire; ``failed``: ``new_ids`` are removed instead (``plan`` is the old one).
    """
    part: WorkerSpoutMove | None = getattr(worker, "spout_move", None)
    worker.spout_move = None
    worker.spout_drain = None
    hooks: list[SpoutHandover | SpoutTakeover] = []
    if part is not None:
        hooks += [*part.handovers, *part.takeovers]
    for hook in hooks:
        hook.uninstall()
    if failed is not None:
        live.remove_new_tasks(worker, [t for t in new_ids if t in worker.tasks])
    elif part is not None and part.old:
        retire_here(worker, part.old)
    worker.topology = topology
    live.reindex(worker, plan)
    if part is None:
        return
    if part.upstream:
        live.switch_routes(worker, part.upstream)
    plain_barriers(worker, part.downstream, len(plan.component_tasks[part.component]))
