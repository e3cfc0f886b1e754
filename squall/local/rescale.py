"""LocalCluster's live rescale: the steps of ``runtime.live`` run on the workers concerned.

Only the workers that host a task being added or removed, or a task feeding a rescaled
component, do more than learn the new plan; none is restarted. A step that fails before the
routers switch (a new task's ``prepare`` raising, a worker not answering) undoes what was
done: the new tasks are cleaned up and the old routing stays.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from squall.runtime import live
from squall.runtime.live_plan import live_plan, upstream_components
from squall.runtime.plan import TaskPlan

STEP_TIMEOUT = 30.0


def new_record(changes: dict[str, tuple[int, int]]) -> dict:
    """A ``rescale`` record (API.md, Rescaling) for a rescale that starts now."""
    return {"status": "running", "components": {c: [o, n] for c, (o, n) in changes.items()},
            "live": True, "moved_key_groups": 0, "moved_bytes": 0, "pause_ms": 0.0,
            "reason": None}


def on_loop(worker: Any, fn: Callable[[], Any], what: str) -> Any:
    """``fn()`` run on ``worker``'s loop thread; its exception is raised here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["ok"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    if not worker.call(run).wait(STEP_TIMEOUT) or not box:
        raise TimeoutError(f"worker {worker.index} did not {what} within {STEP_TIMEOUT:.0f}s")
    if "error" in box:
        raise box["error"]
    return box["ok"]


def by_worker(plan: TaskPlan, tasks: set[int]) -> dict[int, list[int]]:
    """Worker index -> the ones of ``tasks`` it hosts under ``plan`` (sorted)."""
    where = plan.task_worker()
    out: dict[int, list[int]] = {}
    for t in sorted(tasks):
        out.setdefault(where[t], []).append(t)
    return out


def rescale_live(running: Any, topology: Any, changes: dict[str, tuple[int, int]],
                 num_workers: int | None, start_worker: Callable[[int, TaskPlan], Any],
                 record: dict) -> None:
    """Apply ``changes`` to ``running`` while it runs; fills ``record``; raises on failure.

    ``start_worker(index, plan)`` makes, starts and returns a new worker (its tasks opened).
    """
    old: TaskPlan = running.plan
    new = live_plan(old, changes, num_workers)
    workers = list(running.workers)
    old_tasks, new_tasks = set(old.task_component), set(new.task_component)
    added, removed = by_worker(new, new_tasks - old_tasks), by_worker(old, old_tasks - new_tasks)
    feeding = {t for c in changes for u in upstream_components(topology, c)
               for t in new.component_tasks[u]}
    feeding |= {t for c in changes for t in old.component_tasks[c] if t in new_tasks
                and c in upstream_components(topology, c)}
    hub = running.hub
    for _ in range(old.num_workers, new.num_workers):  # the new workers' queues
        hub.queues.append(deque())
        hub.events.append(threading.Event())
        hub.lost.append(0)

    def learn(plan: TaskPlan, topo: Any) -> Callable[[Any], None]:
        return lambda w: on_loop(w, partial(_learn, w, plan, topo), "learn the plan")

    for w in workers:
        learn(new, topology)(w)
    done_adding: list[tuple[Any, list[int]]] = []
    started: list[Any] = []
    try:
        for w in workers:
            ids = added.get(w.index, [])
            if ids:
                on_loop(w, partial(live.add_tasks, w, ids), "prepare its new tasks")
                done_adding.append((w, ids))
        for index in range(old.num_workers, new.num_workers):
            started.append(start_worker(index, new))
    except BaseException:
        for w, ids in done_adding:
            on_loop(w, partial(live.remove_new_tasks, w, ids), "remove its new tasks")
        for w in started:
            w.stop(graceful=True)
            w.join(STEP_TIMEOUT)
        for w in workers:
            learn(old, running.topology)(w)
        raise
    workers += started
    running.workers = workers
    feeding_at = by_worker(new, feeding)
    pauses = [on_loop(w, partial(live.switch_routes, w, feeding_at[w.index]), "switch its routes")
              for w in workers if w.index in feeding_at]
    for w in workers:
        ids = removed.get(w.index, [])
        if ids:
            on_loop(w, partial(live.retire_tasks, w, ids), "retire its removed tasks")
    running.plan = new
    running.topology = topology
    record["pause_ms"] = round(max(pauses, default=0.0) * 1000.0, 3)
    record["status"] = "done"


def _learn(worker: Any, plan: TaskPlan, topology: Any) -> None:
    worker.topology = topology
    live.reindex(worker, plan)


def now_ms() -> float:
    """Real time in milliseconds (the pause of a restart is measured with it)."""
    return time.perf_counter() * 1000.0
