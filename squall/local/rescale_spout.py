"""LocalCluster's live rescale of a spout (``runtime.live_spout``).

``arm`` sets the move up and returns at once; the move itself runs in the tasks. Exactly-once:
it holds the checkpoint spout until no checkpoint is in flight (its record says COMMITTED
``T - 1``), learns the new plan everywhere (the old spout tasks keep seeing the old one: their
spouts read their task index and count), makes the new tasks (opened, not yet emitting),
hooks the old and new tasks, the barriers downstream and the checkpoint spout's route to the
spout, and lets the checkpoint spout go on. At-least-once: the old tasks stop emitting and
drain, watched by a timer on each worker concerned. Either way the tasks do the move by
themselves (old ones retire into a ``RetiredSpout``, new ones start). ``progress`` (called
by the cluster when it is asked about the topology, as simulated time advances and at the
next rebalance) finishes the record once every task has done its part and takes the helpers
off; or, if ``T`` rolled back, removes the new tasks and brings the old plan and routes back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from squall.local.rescale import by_worker, on_loop
from squall.local.rescale_keyed import checkpoint_worker, settled
from squall.runtime import live, live_keyed
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM
from squall.runtime.exactly_once import is_exactly_once
from squall.runtime.live_keyed import MovingBarrier, SwitchRouter, plain_barriers
from squall.runtime.live_spout import (
    DrainedHandover,
    SpoutHandover,
    SpoutSchedule,
    SpoutTakeover,
    retire_here,
    spout_plan,
)
from squall.runtime.plan import TaskPlan

DRAIN_CHECK_SECS = 0.05  # at-least-once: how often a worker looks whether its old tasks drained


@dataclass
class SpoutRescale:
    """A spout's live move in progress on a LocalCluster topology."""

    component: str
    old: TaskPlan
    new: TaskPlan
    old_topology: Any
    record: dict
    txid: int | None = None  # the checkpoint it rides (exactly-once)
    workers: list[Any] = field(default_factory=list)  # the workers the move was set up on
    retiring: dict[int, list[int]] = field(default_factory=dict)  # worker -> old task ids
    added: dict[int, list[int]] = field(default_factory=dict)  # worker -> new task ids
    handovers: list[tuple[Any, SpoutHandover]] = field(default_factory=list)
    takeovers: list[tuple[Any, SpoutTakeover]] = field(default_factory=list)
    downstream: dict[int, list[int]] = field(default_factory=dict)  # worker -> barrier tasks
    upstream: dict[int, list[int]] = field(default_factory=dict)  # worker -> checkpoint spout
    began: float = 0.0  # at-least-once: when the old tasks stopped (worker clock)
    drain: DrainedHandover | None = None  # at-least-once
    timers: list[tuple[Any, Any]] = field(default_factory=list)  # (worker, its drain check)


def arm(running: Any, topology: Any, comp: str, changes: dict[str, tuple[int, int]],
        record: dict) -> SpoutRescale:
    """Set the move up on the running topology (see the module); raises with the old routing kept."""
    old: TaskPlan = running.plan
    new = spout_plan(old, comp, changes[comp][1])
    move = SpoutRescale(comp, old, new, running.topology, record, workers=list(running.workers))
    move.retiring = by_worker(old, set(old.component_tasks[comp]))
    move.added = by_worker(new, set(new.component_tasks[comp]))
    if not is_exactly_once(running.conf):
        _install(running, topology, move)
        for w in move.workers:
            ids = move.retiring.get(w.index)
            if ids:
                move.began = on_loop(w, partial(_stop_emitting, w, ids), "stop its spout tasks")
        timeout = float(running.conf.get("topology.message.timeout.secs") or 30)
        drain = move.drain = DrainedHandover(old.component_tasks[comp], move.began + 2 * timeout)
        for w in move.workers:
            mine, theirs = move.retiring.get(w.index, []), move.added.get(w.index, [])
            if mine or theirs:
                timer = on_loop(w, partial(_every, w, partial(drain.step, w, mine, theirs)),
                                "watch its spout tasks drain")
                move.timers.append((w, timer))
        running.plan, running.topology = new, topology
        return move
    spout_worker = checkpoint_worker(move.workers)
    on_loop(spout_worker, partial(live_keyed.hold_checkpoints, spout_worker), "hold its checkpoints")
    try:
        move.txid = settled(spout_worker)
        _install(running, topology, move)
        _hook(move, topology)
        running.plan, running.topology = new, topology
        return move
    finally:
        on_loop(spout_worker, partial(live_keyed.release_checkpoints, spout_worker),
                "release its checkpoints")


def _install(running: Any, topology: Any, move: SpoutRescale) -> None:
    """Learn the plan everywhere and make the new tasks; undone if a step fails."""
    pinned = set(move.old.component_tasks[move.component])
    for w in move.workers:
        on_loop(w, partial(_learn, w, move.new, topology, pinned, move.old), "learn the plan")
    done: list[tuple[Any, list[int]]] = []
    try:
        for w in move.workers:
            ids = move.added.get(w.index)
            if ids:
                on_loop(w, partial(_add, w, ids), "open its new spout tasks")
                done.append((w, ids))
    except BaseException:
        for w, ids in done:
            on_loop(w, partial(live.remove_new_tasks, w, ids), "remove its new tasks")
        for w in move.workers:
            on_loop(w, partial(_learn, w, move.old, running.topology, set(), move.old), "learn the plan")
        raise


def _learn(worker: Any, plan: TaskPlan, topology: Any, pinned: set[int], old: TaskPlan) -> None:
    worker.topology = topology
    live.reindex(worker, plan)
    for task_id in pinned:  # a retiring spout keeps its view: its index and task count
        task = worker.tasks.get(task_id)
        if task is not None and task.context is not None:
            task.context._plan = old


def _add(worker: Any, ids: list[int]) -> None:
    made: list[Any] = live.add_tasks(worker, ids)
    # exactly-once: active, it emits once it took its position; at-least-once: it is
    # activated once the old tasks closed
    if worker.active and is_exactly_once(worker.conf):
        for task in made:
            task.activate()


def _stop_emitting(worker: Any, ids: list[int]) -> float:
    for task_id in ids:
        task = worker.tasks[task_id]
        task.deactivate()  # no next_tuple; the spout commits what is acked so far
    return float(worker.clock())


def _every(worker: Any, step: Any) -> Any:
    """A timer running ``step`` until it says this worker's part is over (then never again)."""
    def action() -> None:
        if step():
            timer.due = timer.interval = float("inf")  # not fired (nor counted as work) again

    worker.timers.every(worker.clock(), DRAIN_CHECK_SECS, action)
    timer = worker.timers.timers[-1]
    return timer


def _hook(move: SpoutRescale, topology: Any) -> None:
    """Hook the old and new tasks, the barriers after the spout and the checkpoint spout's route."""
    assert move.txid is not None
    comp = move.component
    old_tasks, new_tasks = move.old.component_tasks[comp], move.new.component_tasks[comp]
    schedule = SpoutSchedule(move.txid, old_tasks, new_tasks)
    for w in move.workers:
        for task_id in move.retiring.get(w.index, []):
            h = on_loop(w, partial(_put_handover, w, task_id, schedule.copy()), "hook a task")
            move.handovers.append((w, h))
        for task_id in move.added.get(w.index, []):
            t = on_loop(w, partial(_put, w, task_id, SpoutTakeover, schedule.copy()), "hook a task")
            move.takeovers.append((w, t))
    downstream = [c for c, spec in topology.components.items()
                  if any(i.component == comp and i.stream == CHECKPOINT_STREAM for i in spec.inputs)]
    for w in move.workers:
        ids = [t for t, task in w.tasks.items() if task.component in downstream]
        if ids:
            move.downstream[w.index] = ids
            on_loop(w, partial(_put_barriers, w, ids, schedule, len(old_tasks)), "count barriers")
        ids = [t for t, task in w.tasks.items() if task.component == CHECKPOINT_SPOUT]
        if ids:
            move.upstream[w.index] = ids
            on_loop(w, partial(_put_switch, w, ids, comp, schedule, topology), "route barriers")


def _put_handover(worker: Any, task_id: int, schedule: SpoutSchedule) -> SpoutHandover:
    def retire() -> None:  # called on the loop, mid-round: the swap waits for the next command
        worker.call(partial(retire_here, worker, [task_id]))
    hook = SpoutHandover(worker.tasks[task_id], schedule, retire)
    hook.install()
    return hook


def _put(worker: Any, task_id: int, kind: Any, schedule: SpoutSchedule) -> Any:
    hook = kind(worker.tasks[task_id], schedule)
    hook.install()
    return hook


def _put_barriers(worker: Any, ids: list[int], schedule: SpoutSchedule, old_count: int) -> None:
    for task_id in ids:
        task = worker.tasks[task_id]
        barrier = task.barrier
        if barrier is not None:
            task.barrier = MovingBarrier(barrier, schedule.copy(), barrier.expected - old_count)


def _put_switch(worker: Any, ids: list[int], comp: str, schedule: SpoutSchedule, topology: Any) -> None:
    subs = [s for s, g in topology.subscribers(CHECKPOINT_SPOUT, CHECKPOINT_STREAM) if g.kind != "direct"]
    for task_id in ids:
        route = worker.tasks[task_id].collector._routes[CHECKPOINT_STREAM]
        for i, sub in enumerate(subs):
            if sub == comp:
                route.routers[i] = SwitchRouter(schedule.copy(), None)
        route.single = route.routers[0] if len(route.routers) == 1 else None


def broken(running: Any, move: SpoutRescale) -> bool:
    """A worker the move was set up on stopped or was replaced: its part of the move is lost."""
    return running.workers != move.workers or any(w.stopped.is_set() for w in move.workers)


def progress(running: Any, move: SpoutRescale) -> bool:
    """Finish ``move`` if every task has done its part; True once it is over."""
    if move.txid is None:
        return _progress_alo(running, move)
    old = [on_loop(w, partial(_status, h), "answer") for w, h in move.handovers]
    failed = next((f for _, f, _ in old if f), None)
    new = [on_loop(w, partial(_status, t), "answer") for w, t in move.takeovers]
    if failed is None and not all(done for done, *_ in old + new):
        return False
    hooks: list[tuple[Any, Any]] = [*move.handovers, *move.takeovers]
    for w, hook in hooks:
        on_loop(w, hook.uninstall, "end the move")
    if failed is not None:
        for w in running.workers:
            ids = move.added.get(w.index)
            if ids:
                on_loop(w, partial(live.remove_new_tasks, w, ids), "remove its new tasks")
        _reroute(running, move, move.old, move.old_topology)
        running.plan, running.topology = move.old, move.old_topology
        move.record.update(status="failed", reason=f"{failed}: the old spout tasks go on")
        return True
    _retire(running, move)
    _reroute(running, move, move.new, running.topology)
    stops = [at for _, _, at in old if at is not None]
    starts = [at for _, _, at in new if at is not None]
    pause = (max(starts) - min(stops)) * 1000.0 if stops and starts else 0.0
    move.record.update(status="done", pause_ms=round(max(pause, 0.0), 3))
    return True


def _status(hook: Any) -> tuple[bool, str | None, float | None]:
    if isinstance(hook, SpoutHandover):
        return hook.done, hook.failed, hook.stopped_at
    return hook.done, None, hook.started_at


def _progress_alo(running: Any, move: SpoutRescale) -> bool:
    drain = move.drain
    assert drain is not None
    if not drain.done(set(move.added)):
        return False
    for w, timer in move.timers:
        on_loop(w, partial(w.timers.timers.remove, timer), "stop watching its spout tasks")
    move.record.update(status="done", pause_ms=round(max(0.0, drain.started_at - move.began) * 1000.0, 3))
    return True


def _retire(running: Any, move: SpoutRescale) -> None:
    """The old tasks that have not yet retired do (each closed its spout at COMMIT(T))."""
    for w in running.workers:
        ids = move.retiring.get(w.index)
        if ids:
            on_loop(w, partial(retire_here, w, ids), "retire its old spout tasks")


def _reroute(running: Any, move: SpoutRescale, plan: TaskPlan, topology: Any) -> None:
    """Plain checkpoint routes and barriers again under ``plan``."""
    count = len(plan.component_tasks[move.component])
    for w in running.workers:
        on_loop(w, partial(_learn, w, plan, topology, set(), plan), "learn the plan")
        ids = move.upstream.get(w.index)
        if ids:
            on_loop(w, partial(live.switch_routes, w, ids), "switch its routes")
        ids = move.downstream.get(w.index)
        if ids:
            on_loop(w, partial(plain_barriers, w, ids, count), "count barriers")
