"""A live rescale's steps inside one worker, each run on the worker's loop thread.

The cluster (``squall.local.cluster``) calls them in this order on the workers concerned,
waiting for each step to be done everywhere before the next:

1. ``reindex``: every worker learns the new plan (where new tasks live, the fields of what
   they send); nothing is routed to them yet, and tasks being removed stay deliverable;
2. ``add_tasks``: the workers the plan gives new tasks build and prepare them;
3. ``switch_routes``: each task feeding a rescaled component takes the new target list,
   between two of its tuples (the worker runs it between rounds);
4. ``retire_tasks``: a removed task executes what it has queued, is cleaned up, and is
   replaced by a ``RetiredTask`` that fails whatever still reaches it, so its spout replays
   it to a live task (at-least-once: nothing lost).

No step restarts a worker or replaces a task that stays: a worker hosting neither a rescaled
component nor a task feeding one only gets step 1.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from squall.api.tuple import Tuple
from squall.runtime.assembly import make_routes, make_task
from squall.runtime.host import Task
from squall.runtime.plan import SYSTEM, SYSTEM_STREAM_FIELDS, TaskPlan
from squall.runtime.tasks import SpoutTask
from squall.runtime.timers import _ticker, added_spout_timeouts
from squall.runtime.transfer import _Peer


class RetiredTask(Task):
    """Stands where a removed task was: fails each tracked tuple that still reaches it.

    It keeps the removed task's queue (ticks already scheduled land there and are dropped)
    and its metrics (the component's figures keep what the task did).
    """

    kind = "retired"

    def __init__(self, task: Any) -> None:
        super().__init__(task.host, task.task_id, task.component, None, task.conf)  # type: ignore[arg-type]
        self.inbox = task.inbox
        self.metrics = task.metrics
        self.owner = task.owner
        self.failed = 0
        self._fail: Callable[[Tuple], None] = task.collector.fail

    def handle(self, tup: Tuple) -> None:
        """Fail ``tup`` (a no-op for untracked tuples): its spout replays it elsewhere."""
        if tup._ids:
            self.failed += 1
        self._fail(tup)


def reindex(worker: Any, plan: TaskPlan) -> None:
    """Make ``worker``'s data path know ``plan`` (removed tasks stay deliverable)."""
    old = worker.plan
    worker.plan = plan
    for task in worker.tasks.values():  # what user code reads of the plan is current
        if getattr(task.context, "_plan", None) is old:
            task.context._plan = plan
    task_worker = old.task_worker()
    task_worker.update(plan.task_worker())
    worker._task_worker = task_worker
    slots = max(task_worker) + 1
    if slots > worker._slots:
        grow = slots - worker._slots
        worker._slots = slots
        worker._appends.extend([None] * grow)
        worker._inline.extend([None] * grow)
        for task in worker.tasks.values():
            if task._open is not None:
                task._open.extend([None] * grow)
    sources = worker._sources
    for task, comp in plan.task_component.items():
        if task not in sources:
            like = next((v for v in sources.values() if v[0] == comp), None)
            sources[task] = like if like is not None else (comp, _fields_of(plan, comp))
    for peer in range(len(worker._peers), plan.num_workers):  # new workers
        worker._peers.append(_Peer(peer))
        worker._unsent[peer] = deque()
    # a worker the plan no longer has cannot say "off" for its send buffer any more
    worker._pressure.intersection_update(range(plan.num_workers))


def _fields_of(plan: TaskPlan, comp: str) -> dict:
    out = {stream: sdef.fields for stream, sdef in plan.streams.get(comp, {}).items()}
    out.update(SYSTEM_STREAM_FIELDS)
    return out


def add_tasks(worker: Any, task_ids: list[int]) -> list[Task]:
    """Build and prepare ``task_ids`` (of ``worker.plan``) here; raises if one fails to prepare.

    On failure the tasks made so far are cleaned up and removed again: nothing was routed
    to them yet.
    """
    plan = worker.plan
    worker_tasks = plan.worker_tasks(worker.index)
    local = set(worker_tasks)
    made: list[Task] = []
    try:
        for task_id in task_ids:
            comp = plan.task_component[task_id]
            task = make_task(worker, worker, comp, task_id, worker_tasks, local)
            assert task is not None
            task.out_fields = _fields_of(plan, comp)
            task.owner = threading.get_ident()
            worker.tasks[task_id] = task
            made.append(task)
            task.bind_ackers(worker.tasks)
            task.start()
    except BaseException:
        for task in made:
            worker.tasks.pop(task.task_id, None)
        raise
    for task in made:
        worker._appends[task.task_id] = task.inbox.append
        freq = task.conf.get("topology.tick.tuple.freq.secs")
        if freq:
            system = plan.component_tasks[SYSTEM][worker.index]
            worker.timers.every(worker.clock(), float(freq), _ticker(task, system))
    spouts = [t for t in made if isinstance(t, SpoutTask)]
    added_spout_timeouts(worker.timers, worker.clock(), worker.conf, bool(plan.acker_tasks), spouts,
                         lambda t: worker.tasks.get(t.task_id) is t)
    window = float(worker.conf.get("squall.metrics.window.secs") or 10)

    def roll() -> None:
        for task in made:
            task.metrics.roll_window(window)
    worker.timers.every(worker.clock(), window, roll)
    _place(worker)
    return made


def remove_new_tasks(worker: Any, task_ids: list[int]) -> None:
    """Undo ``add_tasks`` after a failed rescale: clean up and forget ``task_ids`` here."""
    for task_id in task_ids:
        task = worker.tasks.pop(task_id, None)
        if task is not None:
            worker._appends[task_id] = None
            task.stop()
    _place(worker)


def switch_routes(worker: Any, task_ids: list[int]) -> float:
    """Give each of ``task_ids`` the routes ``worker.plan`` makes; the seconds it took.

    The routes' objects stay (the collectors hold them), only their routers change, so the
    next tuple a task emits goes by the new targets.
    """
    began = time.perf_counter()
    local = set(worker.plan.worker_tasks(worker.index))
    for task_id in task_ids:
        task = worker.tasks[task_id]
        routes = make_routes(worker, task.component, task_id, task.context, local)
        for stream, route in task.collector._routes.items():
            new = routes[stream]
            route.routers = new.routers
            route.single = new.single
            route.direct = new.direct
    return time.perf_counter() - began


def retire_tasks(worker: Any, task_ids: list[int], drain: bool = True) -> int:
    """Run what ``task_ids`` have queued, clean them up, leave a ``RetiredTask`` in each's place.

    ``drain`` False: what they have queued is failed instead (by the ``RetiredTask``).
    Returns the tuples they executed on the way out.
    """
    done = 0
    for task_id in task_ids:
        task = worker.tasks[task_id]
        while drain and task.inbox:
            done += task.process(len(task.inbox))
        task.stop()
        retired = RetiredTask(task)
        worker.tasks[task_id] = retired
        worker._appends[task_id] = retired.inbox.append
    _place(worker)
    return done


def _place(worker: Any) -> None:
    worker.round.place(worker.tasks.values(), worker.threads, worker.asyncs, worker.plan.sources)
