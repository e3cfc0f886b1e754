"""A live rescale of a keyed stateful component, riding one checkpoint ``T``.

The cluster holds the checkpoint spout until no checkpoint is in flight (the record says
COMMITTED ``T - 1``), installs what follows on the tasks concerned, and lets the spout go on;
everything else happens in the tasks, driven by the checkpoint tuples they see, so every
task takes each step at the same point of the barrier sequence:

- ``MoveSchedule`` (pure): which of the component's tasks a checkpoint tuple ``(txid,
  action)`` goes to. ``PREPARE(T)`` and everything before it: the old tasks; ``COMMIT(T)``:
  old and new (the old commit what they prepared, the new commit nothing); from then on the
  new tasks. ``ROLLBACK(T)`` means ``T`` rolled back (it is emitted only once ``PREPARE(T)``
  was, whether or not this task forwarded it): the old tasks for good (the move failed, the
  old routing stays).
- ``SwitchRouter``: the ``$checkpoint`` router of a task feeding the component: it sends each
  barrier to the schedule's tasks and switches the task's fields routers to the new table
  right after ``PREPARE(T)`` (so what the task sends after the barrier goes by the new
  table), and back if ``T`` rolls back.
- ``MovingBarrier``: the barrier of a task downstream of the component, expecting as many
  copies as the schedule sends the component's tasks.
- ``KeyedMove``: on each task of the component, a gate around ``execute`` and a hook around
  ``checkpoint``. An old owner commits ``T`` and then releases the key groups it gives up
  (``release_key_groups``); input for them reaching it after its ``PREPARE(T)`` (from an
  at-least-once spout, whose data carries no barrier) is failed and replayed by the new
  table. A new owner holds input for the key groups it takes until it sees a barrier after
  ``COMMIT(T)`` (the checkpoint spout starts one only once ``COMMIT(T)`` completed
  everywhere, so the old owners have committed and released), then adds them
  (``add_key_groups``: their committed state) and runs what it held: ``pause_ms``.

The per-worker steps both clusters run on a worker's loop thread (LocalCluster's
``local.rescale_keyed`` and, on Spark, ``spark.worker_rescale`` by the master's ``rescale``
commands) are at the end: hold and settle the checkpoint spout, open the new tasks' keyed
state, ``arm`` (the moves and moving barriers of the worker's tasks),
``arm_switches`` (the switching routers), ``statuses``, ``end`` and ``reroute``. Each
worker derives what its tasks give and take from the two plans itself.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from squall.runtime import live
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM, Barrier
from squall.runtime.exactly_once import is_exactly_once
from squall.runtime.hashing import hash_values, stable_hash
from squall.runtime.keygroups import default_table, moved, num_key_groups, owned_groups
from squall.runtime.live_plan import upstream_components
from squall.runtime.plan import TaskPlan
from squall.runtime.routing import RouterBase

RECOVERY = ("ROLLBACK", "INITSTATE")


class MoveSchedule:
    """Which tasks of the rescaled component get checkpoint tuple ``(txid, action)`` (pure).

    One copy per task that routes or counts barriers: each sees the same barrier sequence,
    so each decides alike when ``T`` rolled back.
    """

    def __init__(self, txid: int, old: list[int], new: list[int]) -> None:
        self.txid = txid
        self.old = sorted(old)
        self.new = sorted(new)
        self.both = sorted(set(old) | set(new))
        self.switched = False  # PREPARE(T) seen
        self.rolled_back = False

    def copy(self) -> MoveSchedule:
        """A fresh copy for another task."""
        return MoveSchedule(self.txid, self.old, self.new)

    def see(self, txid: int, action: str) -> str:
        """Note barrier ``(txid, action)``; what it is to the move.

        ``switch`` (PREPARE(T)), ``rolled_back`` (T rolled back, just now), ``commit``
        (COMMIT(T)), ``committed`` (a barrier after COMMIT(T)), ``before`` or ``after``.
        """
        t = self.txid
        if self.rolled_back:
            return "before"
        # ROLLBACK(T) exists only once PREPARE(T) was emitted (the record said PREPARING(T)):
        # the move failed, for every task, whether or not this one had forwarded PREPARE(T)
        if (txid == t and action == "ROLLBACK") or (self.switched and action in RECOVERY and txid < t):
            self.rolled_back = True
            return "rolled_back"
        if txid < t:
            return "before"
        if txid == t and action == "PREPARE":
            self.switched = True
            return "switch"
        if txid == t and action == "COMMIT":
            return "commit"
        return "committed"

    def targets(self, txid: int, action: str) -> list[int]:
        """The component's tasks that get ``(txid, action)`` (call after ``see``)."""
        if self.rolled_back or txid < self.txid or (txid == self.txid and action in ("PREPARE", "ROLLBACK")):
            return self.old
        if txid == self.txid and action == "COMMIT":
            return self.both
        return self.new


class SwitchRouter(RouterBase):
    """The ``$checkpoint`` router of a task feeding the rescaled component (see the module)."""

    def __init__(self, schedule: MoveSchedule, switch: Callable[[bool], None] | None) -> None:
        self.schedule = schedule
        self.switch = switch  # switch(True): the new table; switch(False): back to the old

    def route(self, values: list) -> list[int]:
        """The targets of barrier ``values`` (``[txid, action]``); switches tables at T."""
        txid, action = values
        what = self.schedule.see(txid, action)
        if self.switch is not None and what in ("switch", "rolled_back"):
            self.switch(what == "switch")
        return self.schedule.targets(txid, action)


class MovingBarrier(Barrier):
    """A downstream task's barrier: ``others`` senders plus the schedule's tasks of the component."""

    def __init__(self, old: Barrier, schedule: MoveSchedule, others: int) -> None:
        super().__init__(old.expected, old.emission)
        self.key, self.arrived, self.last_txid = old.key, old.arrived, old.last_txid
        self._over = old._over
        self.schedule = schedule
        self.others = others

    def add(self, txid: int, action: str, source: int, item: object) -> tuple[list, list]:
        """As ``Barrier.add``, expecting the copies the component's tasks send for this one."""
        if self.key is None or self.key[:2] != (txid, action):
            self.schedule.see(txid, action)
        self.expected = self.others + len(self.schedule.targets(txid, action))
        return super().add(txid, action, source, item)


def key_of(indexes: list[int]) -> Callable[[list], int]:
    """The fields grouping's hash of a tuple's values, as ``FieldsRouter`` computes it."""
    if len(indexes) == 1:
        i = indexes[0]
        return lambda values: stable_hash(values[i])
    return lambda values: hash_values([values[i] for i in indexes])


class KeyedMove:
    """The move as one task of the rescaled component takes part in it (see the module).

    ``giving``: key groups this task releases after committing T; ``taking``: key groups it
    adds once T committed; ``keys``: (source component, stream) -> hash of a tuple's key;
    ``exactly_once``: held input is dropped, not failed, if T rolls back (it is read again).
    """

    def __init__(self, task: Any, schedule: MoveSchedule, giving: set[int], taking: set[int],
                 keys: dict[tuple[str, str], Callable[[list], int]], num_key_groups: int,
                 exactly_once: bool) -> None:
        self.task = task
        self.schedule = schedule
        self.giving = giving
        self.taking = taking
        self.keys = keys
        self.k = num_key_groups
        self.exactly_once = exactly_once
        self.closed: set[int] = set()  # given up: input for them is failed (replayed elsewhere)
        self.holding: set[int] = set(taking)
        self.held: list[Any] = []
        self.held_since: float | None = None
        self.pause_ms = 0.0
        self.moved_bytes = 0
        self.released = not giving
        self.added = not taking
        self.failed: str | None = None
        self.execute = task._bound_execute
        self.checkpoint = task.checkpoint  # the task's own (bound) method

    @property
    def done(self) -> bool:
        """The task's part is over (groups released and added), or T rolled back."""
        return (self.released and self.added) or self.schedule.rolled_back

    def install(self) -> None:
        """Gate ``execute`` and hook ``checkpoint`` (on the task's thread)."""
        self.task._bound_execute = self.gate
        self.task.checkpoint = self.on_checkpoint

    def uninstall(self) -> None:
        """Give the task back its own ``execute`` and ``checkpoint``."""
        self.task._bound_execute = self.execute
        self.task.__dict__.pop("checkpoint", None)

    def gate(self, tup: Any) -> None:
        """Execute ``tup`` unless its key group is being taken (hold) or was given (fail)."""
        key = self.keys.get((tup.component, tup.stream))
        if key is not None and not tup.is_tick():
            group = key(tup.values) % self.k
            if group in self.holding:
                if self.held_since is None:
                    self.held_since = self.task.host.clock()
                self.held.append(tup)
                return
            if group in self.closed:
                self.task.collector.fail(tup)
                return
        self.execute(tup)

    def on_checkpoint(self, txid: int, action: Any) -> bool:
        """The task's checkpoint, with the move's steps before or after it."""
        what = self.schedule.see(txid, str(action))
        if what == "rolled_back":
            self.abandon()
        elif what == "committed" and not self.added:
            self._take()
        ok = bool(self.checkpoint(txid, action))
        if ok and what == "switch":
            self.closed = set(self.giving)
        elif ok and what == "commit" and not self.released:
            self.task.state.release_key_groups(sorted(self.giving))
            self.released = True
        return ok

    def _take(self) -> None:
        state = self.task.state
        groups = sorted(self.taking)
        for s in state.open_states(groups):
            for pair in _committed(s):
                self.moved_bytes += len(pickle.dumps(pair, protocol=5))
        state.add_key_groups(groups)
        self.added = True
        self.holding = set()
        held, self.held = self.held, []
        if self.held_since is not None:
            self.pause_ms = round((self.task.host.clock() - self.held_since) * 1000.0, 3)
        for tup in held:
            self.execute(tup)

    def abandon(self) -> None:
        """T rolled back: nothing moved; held input is replayed (at-least-once) or read again."""
        self.holding = set()
        self.closed = set()
        held, self.held = self.held, []
        if not self.exactly_once:
            for tup in held:
                self.task.collector.fail(tup)
        self.failed = f"checkpoint {self.schedule.txid} rolled back"


def _committed(state: Any) -> Any:
    items = getattr(state, "committed_items", None)
    return items() if items is not None else iter(state)


# ---- the per-worker steps (on the worker's loop thread) ----------------------------------


class NotSettled(RuntimeError):
    """No moment without a checkpoint in flight came: the cluster restarts instead."""


@dataclass
class WorkerMove:
    """One worker's part of a keyed move: its tasks' moves and the tasks it rewired."""

    component: str
    moves: list[KeyedMove] = field(default_factory=list)
    upstream: list[int] = field(default_factory=list)  # tasks feeding the component (switches)
    downstream: list[int] = field(default_factory=list)  # tasks fed by it (moving barriers)


def checkpoint_coordinator(worker: Any) -> Any | None:
    """The checkpoint spout's coordinator if ``worker`` hosts the spout, else None."""
    for task in worker.tasks.values():
        if task.component == CHECKPOINT_SPOUT:
            return task.spout._coordinator
    return None


def hold_checkpoints(worker: Any) -> None:
    """Begin no new checkpoint until ``release_checkpoints`` (one under way still ends)."""
    c = checkpoint_coordinator(worker)
    if c is None:
        raise RuntimeError(f"worker {worker.index} hosts no checkpoint spout")
    c.hold()


def release_checkpoints(worker: Any) -> None:
    """Let the checkpoint spout begin checkpoints again."""
    c = checkpoint_coordinator(worker)
    if c is not None:
        c.release()


def checkpoints_idle(worker: Any) -> tuple[bool, int]:
    """(no checkpoint in flight nor recovering and the last committed, that txid)."""
    c = checkpoint_coordinator(worker)
    if c is None:
        raise RuntimeError(f"worker {worker.index} hosts no checkpoint spout")
    return c.idle(), int(c.state.txid)


def check_keyed(worker: Any, task_ids: list[int]) -> None:
    """Raise ``NotSettled`` unless each of ``task_ids`` here has its keyed state open."""
    for task_id in task_ids:
        task = worker.tasks[task_id]
        if getattr(task.state, "release_key_groups", None) is None or not task.initialized:
            raise NotSettled(f"task {task_id} of {task.component!r} has no keyed state open yet "
                             f"(its checkpoints have not started)")


def open_new(worker: Any, ids: list[int]) -> None:
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


def _keys(topology: Any, plan: TaskPlan, comp: str) -> dict[tuple[str, str], Any]:
    """(source, stream) -> the hash of a tuple's key, for each fields input of ``comp``."""
    out = {}
    for inp in topology.components[comp].inputs:
        if inp.stream != CHECKPOINT_STREAM and inp.grouping.kind == "fields":
            fields = plan.streams[inp.component][inp.stream].fields
            out[(inp.component, inp.stream)] = key_of([fields.index(f) for f in inp.grouping.fields])
    return out


def arm(worker: Any, comp: str, old: TaskPlan, new: TaskPlan, topology: Any, txid: int) -> WorkerMove:
    """A ``KeyedMove`` on ``comp``'s tasks here, a ``MovingBarrier`` on those downstream.

    Kept as ``worker.keyed_move``. Call once the checkpoint spout is held (nothing in
    flight) and ``worker`` learned ``new`` (its new tasks made and opened).
    """
    conf = worker.conf
    k = num_key_groups(conf)
    old_tasks, new_tasks = old.component_tasks[comp], new.component_tasks[comp]
    old_table, new_table = default_table(len(old_tasks), k), default_table(len(new_tasks), k)
    groups = moved(old_table, new_table)
    schedule = MoveSchedule(txid, old_tasks, new_tasks)
    part = WorkerMove(comp)
    keys = _keys(topology, new, comp)
    index_old = {t: i for i, t in enumerate(old_tasks)}
    index_new = {t: i for i, t in enumerate(new_tasks)}
    exactly_once = is_exactly_once(conf)
    for task_id in sorted((set(old_tasks) | set(new_tasks)) & set(worker.tasks)):
        giving = {g for g, (a, _) in groups.items() if index_old.get(task_id) == a}
        if task_id in index_old and task_id not in index_new:
            giving = set(owned_groups(old_table, index_old[task_id]))
        taking = {g for g, (_, b) in groups.items() if index_new.get(task_id) == b}
        m = KeyedMove(worker.tasks[task_id], schedule.copy(), giving, taking, keys, k, exactly_once)
        m.install()
        part.moves.append(m)
    downstream = {c for c, spec in topology.components.items()
                  if any(i.component == comp and i.stream == CHECKPOINT_STREAM for i in spec.inputs)}
    for task_id, task in worker.tasks.items():
        if task.component in downstream:
            part.downstream.append(task_id)
            barrier = task.barrier
            if barrier is not None:
                task.barrier = MovingBarrier(barrier, schedule.copy(), barrier.expected - len(old_tasks))
    worker.keyed_move = part
    return part


def arm_switches(worker: Any, old: TaskPlan, new: TaskPlan, topology: Any, txid: int) -> list[int]:
    """A ``SwitchRouter`` on the ``$checkpoint`` route of each task here feeding the component.

    An at-least-once spout switches its tables now. Returns their ids. Call once every
    worker ran ``arm``: a switched table sends keys to new owners.
    """
    part: WorkerMove = worker.keyed_move
    comp = part.component
    k = num_key_groups(worker.conf)
    old_tasks, new_tasks = old.component_tasks[comp], new.component_tasks[comp]
    schedule = MoveSchedule(txid, old_tasks, new_tasks)
    targets = {True: (new_tasks, default_table(len(new_tasks), k)),
               False: (old_tasks, default_table(len(old_tasks), k))}
    exactly_once = is_exactly_once(worker.conf)
    feeding = set(upstream_components(topology, comp)) | {CHECKPOINT_SPOUT}
    for task_id, task in worker.tasks.items():
        if task.component not in feeding:
            continue
        part.upstream.append(task_id)
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
                barrier.routers[i] = SwitchRouter(schedule.copy(), None if spout_alo else switch)
            barrier.single = barrier.routers[0] if len(barrier.routers) == 1 else None
    return list(part.upstream)


def _positions(topology: Any, source: str, stream: str, comp: str) -> list[int]:
    """Where ``comp``'s router sits among the routers of ``source``'s ``stream`` (assembly's order)."""
    subs = [s for s, g in topology.subscribers(source, stream) if g.kind != "direct"]
    return [i for i, s in enumerate(subs) if s == comp]


def _routers_to(topology: Any, source: str, stream: str, comp: str, route: Any) -> list[Any]:
    return [route.routers[i] for i in _positions(topology, source, stream, comp)
            if hasattr(route.routers[i], "set_table")]


def statuses(worker: Any) -> list[tuple[bool, str | None, float, int]]:
    """(done, failed, pause_ms, moved bytes) of each task's move here."""
    part: WorkerMove | None = getattr(worker, "keyed_move", None)
    if part is None:
        return []
    return [(m.done, m.failed, m.pause_ms, m.moved_bytes) for m in part.moves]


def end(worker: Any, failed: str | None) -> None:
    """Take the moves off the tasks here.

    ``failed``: a task the rollback has not reached (a new one) lets go of what it held.
    """
    part: WorkerMove | None = getattr(worker, "keyed_move", None)
    for m in part.moves if part is not None else []:
        if failed is not None and m.failed is None:
            m.abandon()
        m.uninstall()


def reroute(worker: Any, plan: TaskPlan, topology: Any) -> None:
    """Plain routes and barriers again under ``plan`` (the switch's last answer, for good)."""
    worker.topology = topology
    live.reindex(worker, plan)
    part: WorkerMove | None = getattr(worker, "keyed_move", None)
    worker.keyed_move = None
    if part is None:
        return
    if part.upstream:
        live.switch_routes(worker, part.upstream)
    plain_barriers(worker, part.downstream, len(plan.component_tasks[part.component]))


def plain_barriers(worker: Any, ids: Any, count: int) -> None:
    """The moving barriers of tasks ``ids`` plain again, expecting ``count`` copies of the moved one."""
    for task_id in ids:
        task = worker.tasks[task_id]
        barrier = task.barrier
        if isinstance(barrier, MovingBarrier):
            plain = Barrier(barrier.others + count, barrier.emission)
            plain.key, plain.arrived, plain.last_txid = barrier.key, barrier.arrived, barrier.last_txid
            plain._over = barrier._over
            task.barrier = plain
