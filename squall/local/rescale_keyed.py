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
from squall.runtime import live, live_keyed
from squall.runtime.keygroups import default_table, moved, num_key_groups
from squall.runtime.live_keyed import NotSettled
from squall.runtime.live_plan import live_plan
from squall.runtime.plan import TaskPlan

__all__ = ["SETTLE_ROUNDS", "KeyedRescale", "NotSettled", "arm", "broken", "progress"]

SETTLE_ROUNDS = 200  # worker rounds the checkpoint spout is given to finish its checkpoint


@dataclass
class KeyedRescale:
    """A keyed move in progress on a LocalCluster topology."""

    component: str
    old: TaskPlan
    new: TaskPlan
    txid: int
    record: dict
    workers: list[Any] = field(default_factory=list)  # the workers the move was set up on
    added: dict[int, list[int]] = field(default_factory=dict)
    removed: dict[int, list[int]] = field(default_factory=dict)


def arm(running: Any, topology: Any, comp: str, changes: dict[str, tuple[int, int]],
        record: dict) -> KeyedRescale:
    """Set the move up on the running topology (see the module); raises with the old routing kept."""
    old: TaskPlan = running.plan
    workers = list(running.workers)
    spout_worker = checkpoint_worker(workers)
    on_loop(spout_worker, partial(live_keyed.hold_checkpoints, spout_worker), "hold its checkpoints")
    try:
        txid = settled(spout_worker)
        new = live_plan(old, changes)
        move = KeyedRescale(comp, old, new, txid, record)
        _install(running, topology, move, workers)
        return move
    finally:
        on_loop(spout_worker, partial(live_keyed.release_checkpoints, spout_worker),
                "release its checkpoints")


def checkpoint_worker(workers: list[Any]) -> Any:
    """The worker that hosts the checkpoint spout."""
    found = next((w for w in workers if live_keyed.checkpoint_coordinator(w) is not None), None)
    if found is None:
        raise RuntimeError("the topology has no checkpoint spout")
    return found


def settled(worker: Any) -> int:
    """The txid of a move: one past the last commit, once nothing is in flight (checkpoints held)."""
    for _ in range(SETTLE_ROUNDS):
        idle, txid = on_loop(worker, partial(live_keyed.checkpoints_idle, worker), "answer")
        if idle:
            return txid + 1
    raise NotSettled("a checkpoint was in flight or recovering, so no barrier was free to carry "
                     "the move")


def _install(running: Any, topology: Any, move: KeyedRescale, workers: list[Any]) -> None:
    comp, old, new = move.component, move.old, move.new
    k = num_key_groups(running.conf)
    old_tasks, new_tasks = old.component_tasks[comp], new.component_tasks[comp]
    move.record["moved_key_groups"] = len(moved(default_table(len(old_tasks), k),
                                                default_table(len(new_tasks), k)))
    move.workers = list(workers)
    move.added = by_worker(new, set(new_tasks) - set(old_tasks))
    move.removed = by_worker(old, set(old_tasks) - set(new_tasks))
    for index, owned in by_worker(old, set(old_tasks)).items():  # each old task has its keyed state open
        w = workers[index]
        on_loop(w, partial(live_keyed.check_keyed, w, owned), "check its keyed state")
    for w in workers:
        on_loop(w, partial(_learn, w, new, topology), "learn the plan")
    done: list[tuple[Any, list[int]]] = []
    try:
        for w in workers:
            ids = move.added.get(w.index)
            if ids:
                on_loop(w, partial(live.add_tasks, w, ids), "prepare its new tasks")
                done.append((w, ids))
                on_loop(w, partial(live_keyed.open_new, w, ids), "open its new tasks' state")
    except BaseException:
        for w, ids in done:
            on_loop(w, partial(live.remove_new_tasks, w, ids), "remove its new tasks")
        for w in workers:
            on_loop(w, partial(_learn, w, old, running.topology), "learn the plan")
        raise
    for w in workers:
        on_loop(w, partial(live_keyed.arm, w, comp, old, new, topology, move.txid), "take part in the move")
    for w in workers:
        on_loop(w, partial(live_keyed.arm_switches, w, old, new, topology, move.txid),
                "switch at the barrier")
    running.plan = new
    running.topology = topology


def _learn(worker: Any, plan: TaskPlan, topology: Any) -> None:
    worker.topology = topology
    live.reindex(worker, plan)


def broken(running: Any, move: KeyedRescale) -> bool:
    """A worker the move was set up on stopped or was replaced: its part of the move is lost."""
    return running.workers != move.workers or any(w.stopped.is_set() for w in move.workers)


def progress(running: Any, move: KeyedRescale) -> bool:
    """Finish ``move`` if every task has done its part; True once it is over."""
    states = [s for w in move.workers
              for s in on_loop(w, partial(live_keyed.statuses, w), "answer")]
    failed = next((f for _, f, _, _ in states if f), None)
    # a rolled back T never reaches the new tasks: one task that saw it ends the move
    if failed is None and not all(done for done, *_ in states):
        return False
    workers = running.workers
    for w in workers:
        on_loop(w, partial(live_keyed.end, w, failed), "end the move")
    if failed is not None:
        for w in workers:
            ids = move.added.get(w.index)
            if ids:
                on_loop(w, partial(live.retire_tasks, w, ids, False), "retire its new tasks")
        _reroute(running, move.old)
        running.plan = move.old
        move.record.update(status="failed", reason=f"{failed}: the old routing stays",
                           moved_key_groups=0)
        return True
    for w in workers:
        ids = move.removed.get(w.index)
        if ids:
            on_loop(w, partial(live.retire_tasks, w, ids), "retire its removed tasks")
    _reroute(running, move.new)
    move.record.update(status="done", pause_ms=max((p for *_, p, _ in states), default=0.0),
                       moved_bytes=sum(b for *_, b in states))
    return True


def _reroute(running: Any, plan: TaskPlan) -> None:
    for w in running.workers:
        on_loop(w, partial(live_keyed.reroute, w, plan, running.topology), "switch its routes")
