"""LocalCluster's live rescale of a keyed stateful component (``runtime.live_keyed``).

``arm`` holds the checkpoint spout until no checkpoint is in flight (its record says
COMMITTED ``T - 1``), learns the new plan everywhere, makes the new tasks (their keyed state
with no key group yet), puts a ``KeyedMove`` on every task of the component, a
``MovingBarrier`` on every task downstream and a ``SwitchRouter`` on every ``$checkpoint``
route into the component, then lets the spout go on: the move rides checkpoint ``T`` in
the tasks themselves. ``progress`` (called by the cluster when it is asked about the
topology, and as simulated time advances) finishes it once every task has done its part:
the removed tasks retire and the helpers come off; or, if ``T`` rolled back, the new tasks
retire and the old plan and routes come back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from squall.local.rescale import by_worker, on_loop
from squall.runtime import live
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM, Barrier, Phase
from squall.runtime.exactly_once import is_exactly_once
from squall.runtime.hashing import stable_hash
from squall.runtime.keygroups import default_table, moved, num_key_groups, owned_groups
from squall.runtime.live_keyed import KeyedMove, MoveSchedule, MovingBarrier, SwitchRouter, key_of
from squall.runtime.live_plan import live_plan, upstream_components
from squall.runtime.plan import TaskPlan

SETTLE_ROUNDS = 200  # worker rounds the checkpoint spout is given to finish its checkpoint


class NotSettled(RuntimeError):
    """No moment without a checkpoint in flight came: the cluster restarts instead."""


@dataclass
class KeyedRescale:
    """A keyed move in progress on a LocalCluster topology."""

    component: str
    old: TaskPlan
    new: TaskPlan
    txid: int
    record: dict
    workers: list[Any] = field(default_factory=list)  # the workers the move was set up on
    moves: list[tuple[Any, KeyedMove]] = field(default_factory=list)  # (worker, move)
    upstream: dict[int, list[int]] = field(default_factory=dict)  # worker -> tasks feeding
    downstream: dict[int, list[int]] = field(default_factory=dict)  # worker -> tasks fed
    added: dict[int, list[int]] = field(default_factory=dict)
    removed: dict[int, list[int]] = field(default_factory=dict)


def arm(running: Any, topology: Any, comp: str, changes: dict[str, tuple[int, int]],
        record: dict) -> KeyedRescale:
    """Set the move up on the running topology (see the module); raises with the old routing kept."""
    old: TaskPlan = running.plan
    workers = list(running.workers)
    spout_worker, spout = _checkpoint_spout(workers)
    coordinator = spout.spout._coordinator
    held = on_loop(spout_worker, partial(_hold, coordinator), "hold its checkpoints")
    try:
        txid = _settled(spout_worker, coordinator)
        new = live_plan(old, changes)
        move = KeyedRescale(comp, old, new, txid, record)
        _install(running, topology, move, workers)
        return move
    finally:
        on_loop(spout_worker, partial(_release, coordinator, held), "release its checkpoints")


def _checkpoint_spout(workers: list[Any]) -> tuple[Any, Any]:
    for w in workers:
        for task in w.tasks.values():
            if task.component == CHECKPOINT_SPOUT:
                return w, task
    raise RuntimeError("the topology has no checkpoint spout")


def _hold(coordinator: Any) -> float:
    held, coordinator._retry_at = coordinator._retry_at, float("inf")
    return float(held)


def _release(coordinator: Any, held: float) -> None:
    coordinator._retry_at = held


def _settled(worker: Any, coordinator: Any) -> int:
    """The txid of the move: one past the last commit, once nothing is in flight."""
    def state() -> tuple[bool, int]:
        c = coordinator
        return (c.in_flight is None and not c.recovering and c.state.phase is Phase.COMMITTED,
                c.state.txid)
    for _ in range(SETTLE_ROUNDS):
        idle, txid = on_loop(worker, state, "answer")
        if idle:
            return txid + 1
    raise NotSettled("a checkpoint was in flight or recovering, so no barrier was free to carry "
                     "the move")


def _install(running: Any, topology: Any, move: KeyedRescale, workers: list[Any]) -> None:
    comp, old, new = move.component, move.old, move.new
    conf = running.conf
    k = num_key_groups(conf)
    old_tasks, new_tasks = old.component_tasks[comp], new.component_tasks[comp]
    old_table, new_table = default_table(len(old_tasks), k), default_table(len(new_tasks), k)
    groups = moved(old_table, new_table)
    move.record["moved_key_groups"] = len(groups)
    schedule = MoveSchedule(move.txid, old_tasks, new_tasks)
    move.workers = list(workers)
    move.added = by_worker(new, set(new_tasks) - set(old_tasks))
    move.removed = by_worker(old, set(old_tasks) - set(new_tasks))
    where = new.task_worker()
    where.update(old.task_worker())
    for task_id in old_tasks:  # before anything changes: each old task has its keyed state open
        w = workers[where[task_id]]
        on_loop(w, partial(_check_keyed, w, task_id), "check its keyed state")
    for w in workers:
        on_loop(w, partial(_learn, w, new, topology), "learn the plan")
    done: list[tuple[Any, list[int]]] = []
    try:
        for w in workers:
            ids = move.added.get(w.index)
            if ids:
                on_loop(w, partial(live.add_tasks, w, ids), "prepare its new tasks")
                done.append((w, ids))
                on_loop(w, partial(_open_new, w, ids), "open its new tasks' state")
    except BaseException:
        for w, ids in done:
            on_loop(w, partial(live.remove_new_tasks, w, ids), "remove its new tasks")
        for w in workers:
            on_loop(w, partial(_learn, w, old, running.topology), "learn the plan")
        raise
    keys = _keys(topology, new, comp)
    index_old = {t: i for i, t in enumerate(old_tasks)}
    index_new = {t: i for i, t in enumerate(new_tasks)}
    exactly_once = is_exactly_once(conf)
    for task_id in sorted(set(old_tasks) | set(new_tasks)):
        giving = {g for g, (a, _) in groups.items() if index_old.get(task_id) == a}
        if task_id in index_old and task_id not in index_new:
            giving = set(owned_groups(old_table, index_old[task_id]))
        taking = {g for g, (_, b) in groups.items() if index_new.get(task_id) == b}
        w = workers[where[task_id]]
        m = on_loop(w, partial(_put_move, w, task_id, schedule.copy(), giving, taking, keys, k,
                               exactly_once), "take part in the move")
        move.moves.append((w, m))
    downstream = [c for c, spec in topology.components.items()
                  if any(i.component == comp and i.stream == CHECKPOINT_STREAM for i in spec.inputs)]
    for w in workers:
        ids = [t for t, task in w.tasks.items() if task.component in downstream]
        if ids:
            move.downstream[w.index] = ids
            on_loop(w, partial(_put_barriers, w, ids, schedule, len(old_tasks)), "count barriers")
    feeding = {u for u in upstream_components(topology, comp)} | {CHECKPOINT_SPOUT}
    targets = {True: (new_tasks, new_table), False: (old_tasks, old_table)}
    for w in workers:
        ids = [t for t, task in w.tasks.items() if task.component in feeding]
        if ids:
            move.upstream[w.index] = ids
            on_loop(w, partial(_put_switches, w, ids, comp, schedule, targets, topology,
                               exactly_once), "switch at the barrier")
    running.plan = new
    running.topology = topology


def _learn(worker: Any, plan: TaskPlan, topology: Any) -> None:
    worker.topology = topology
    live.reindex(worker, plan)


def _keys(topology: Any, plan: TaskPlan, comp: str) -> dict[tuple[str, str], Any]:
    """(source, stream) -> the hash of a tuple's key, for each fields input of ``comp``."""
    out = {}
    for inp in topology.components[comp].inputs:
        if inp.stream != CHECKPOINT_STREAM and inp.grouping.kind == "fields":
            fields = plan.streams[inp.component][inp.stream].fields
            out[(inp.component, inp.stream)] = key_of([fields.index(f) for f in inp.grouping.fields])
    return out


def _open_new(worker: Any, ids: list[int]) -> None:
    """A new task's keyed state, with no key group yet, handed to its bolt; no recovery wait."""
    from squall.runtime.stateful import HISTORY_KEY
    from squall.state import load_provider
    from squall.state.keygrouped import KeyGroupedState, record_namespace

    for task_id in ids:
        task = worker.tasks[task_id]
        conf, ctx = task.conf, task.context
        provider: Any = load_provider(conf)
        prefix = f"{ctx.topology_name}/{ctx.component_id}"
        history = provider.new_state(f"{prefix}/$tasks", conf, ctx).get(HISTORY_KEY) or [0]
        index = ctx.get_this_task_index()
        record = provider.new_state(record_namespace(prefix, index, len(history) - 1), conf, ctx)
        sibling = getattr(record, "sibling", None)
        opener = sibling if sibling is not None else partial(_new_state, provider, conf, ctx)
        task.state = KeyGroupedState(opener, prefix, index, num_key_groups(conf), [], record,
                                     stable_hash)
        task.bolt.init_state(task.state)
        task.initialized = True
        alignment = getattr(task, "alignment", None)
        if alignment is not None:
            alignment.recovering = False  # it joins at COMMIT(T), behind every barrier before


def _new_state(provider: Any, conf: dict, context: Any, namespace: str) -> Any:
    return provider.new_state(namespace, conf, context)


def _check_keyed(worker: Any, task_id: int) -> None:
    task = worker.tasks[task_id]
    if getattr(task.state, "release_key_groups", None) is None or not task.initialized:
        raise NotSettled(f"task {task_id} of {task.component!r} has no keyed state open yet "
                         f"(its checkpoints have not started)")


def _put_move(worker: Any, task_id: int, schedule: MoveSchedule, giving: set[int],
              taking: set[int], keys: dict, k: int, exactly_once: bool) -> KeyedMove:
    task = worker.tasks[task_id]
    m = KeyedMove(task, schedule, giving, taking, keys, k, exactly_once)
    m.install()
    return m


def _put_barriers(worker: Any, ids: list[int], schedule: MoveSchedule, old_count: int) -> None:
    for task_id in ids:
        task = worker.tasks[task_id]
        barrier = task.barrier
        if barrier is not None:
            task.barrier = MovingBarrier(barrier, schedule.copy(), barrier.expected - old_count)


def _plain_barriers(worker: Any, ids: list[int], count: int) -> None:
    """The moving barriers made plain again, expecting ``count`` copies from the component."""
    for task_id in ids:
        task = worker.tasks[task_id]
        barrier = task.barrier
        if isinstance(barrier, MovingBarrier):
            plain = Barrier(barrier.others + count, barrier.emission)
            plain.key, plain.arrived, plain.last_txid = barrier.key, barrier.arrived, barrier.last_txid
            plain._over = barrier._over
            task.barrier = plain


def _put_switches(worker: Any, ids: list[int], comp: str, schedule: MoveSchedule,
                  targets: dict, topology: Any, exactly_once: bool) -> None:
    for task_id in ids:
        task = worker.tasks[task_id]
        routes = task.collector._routes
        fields = [r for stream in routes if stream != CHECKPOINT_STREAM
                  for r in _routers_to(topology, task.component, stream, comp, routes[stream])]

        def switch(to_new: bool, fields: list = fields) -> None:
            tasks, table = targets[to_new]
            for router in fields:
                router.set_table(tasks, table)

        barrier = routes.get(CHECKPOINT_STREAM)
        spout_alo = task.kind == "spout" and task.component != CHECKPOINT_SPOUT and not exactly_once
        if spout_alo:  # no barrier runs through an at-least-once spout: switch now
            switch(True)
        if barrier is not None:
            for i in _positions(topology, task.component, CHECKPOINT_STREAM, comp):
                router = SwitchRouter(schedule.copy(), None if spout_alo else switch)
                barrier.routers[i] = router
            barrier.single = barrier.routers[0] if len(barrier.routers) == 1 else None


def _positions(topology: Any, source: str, stream: str, comp: str) -> list[int]:
    """Where ``comp``'s router sits among the routers of ``source``'s ``stream`` (assembly's order)."""
    subs = [s for s, g in topology.subscribers(source, stream) if g.kind != "direct"]
    return [i for i, s in enumerate(subs) if s == comp]


def _routers_to(topology: Any, source: str, stream: str, comp: str, route: Any) -> list[Any]:
    return [route.routers[i] for i in _positions(topology, source, stream, comp)
            if hasattr(route.routers[i], "set_table")]


def broken(running: Any, move: KeyedRescale) -> bool:
    """A worker the move was set up on stopped or was replaced: its part of the move is lost."""
    return running.workers != move.workers or any(w.stopped.is_set() for w in move.workers)


def progress(running: Any, move: KeyedRescale) -> bool:
    """Finish ``move`` if every task has done its part; True once it is over."""
    states = [on_loop(w, partial(_status, m), "answer") for w, m in move.moves]
    failed = next((f for _, f, _, _ in states if f), None)
    # a rolled back T never reaches the new tasks: one task that saw it ends the move
    if failed is None and not all(done for done, *_ in states):
        return False
    workers = running.workers
    for w, m in move.moves:
        on_loop(w, partial(_end, m, failed), "end the move")
    if failed is not None:
        for w in workers:
            ids = move.added.get(w.index)
            if ids:
                on_loop(w, partial(live.retire_tasks, w, ids, False), "retire its new tasks")
        _reroute(running, move, move.old)
        running.plan = move.old
        move.record.update(status="failed", reason=f"{failed}: the old routing stays",
                           moved_key_groups=0)
        return True
    for w in workers:
        ids = move.removed.get(w.index)
        if ids:
            on_loop(w, partial(live.retire_tasks, w, ids), "retire its removed tasks")
    _reroute(running, move, move.new)
    move.record.update(status="done", pause_ms=max((p for *_, p, _ in states), default=0.0),
                       moved_bytes=sum(b for *_, b in states))
    return True


def _status(m: KeyedMove) -> tuple[bool, str | None, float, int]:
    return m.done, m.failed, m.pause_ms, m.moved_bytes


def _end(m: KeyedMove, failed: str | None) -> None:
    if failed is not None and m.failed is None:
        m.abandon()  # a task the rollback has not reached (a new one): let go of what it held
    m.uninstall()


def _reroute(running: Any, move: KeyedRescale, plan: TaskPlan) -> None:
    """Plain routes and barriers again under ``plan`` (the switch's last answer, for good)."""
    count = len(plan.component_tasks[move.component])
    for w in running.workers:
        on_loop(w, partial(_learn, w, plan, running.topology), "learn the plan")
        ids = move.upstream.get(w.index)
        if ids:
            on_loop(w, partial(live.switch_routes, w, ids), "switch its routes")
        ids = move.downstream.get(w.index)
        if ids:
            on_loop(w, partial(_plain_barriers, w, ids, count), "count barriers")
