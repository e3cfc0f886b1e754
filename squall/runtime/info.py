"""``get_topology_info``: figures per component and worker, from the workers' tasks."""

from __future__ import annotations

import os
import socket
from collections import defaultdict

from squall.runtime.chain import chain_by_component
from squall.runtime.metrics import TaskMetrics, aggregate
from squall.runtime.plan import SYSTEM, TaskPlan


def component_figures(plan: TaskPlan, metrics: list[TaskMetrics], per_task: bool = True) -> dict[str, dict]:
    """Each component's figures folded from its tasks' ``metrics`` (``aggregate``): the costly part."""
    by_component: dict[str, list[TaskMetrics]] = defaultdict(list)
    for m in metrics:
        by_component[m.component].append(m)
    return {comp: aggregate(by_component.get(comp, []), per_task)
            for comp in plan.component_tasks if comp != SYSTEM}


def topology_info(name: str, status: str, plan: TaskPlan, metrics: list[TaskMetrics],
                  errors: list[dict], uptime_secs: float,
                  workers: list[dict] | None = None, stuck: list[dict] | None = None,
                  per_task: bool = True, figures: dict[str, dict] | None = None) -> dict:
    """The info dict of API.md: name, status, components, chains, workers, errors.

    ``stuck``: the tasks inside one call for longer than ``squall.task.stuck.secs`` now
    (component, task, method, secs, waits_in, stack); a task leaves the list when it moves.
    A chained component's figures, errors and stuck entries carry ``chain`` (the chain it
    runs fused in, head first) beside its own name. ``per_task=False`` leaves out each
    component's ``by_task``. ``figures``: ``component_figures`` folded earlier (then
    ``metrics`` is not read); they are shared, not copied, so the caller must not change them.
    """
    chained = chain_by_component(plan.chains)
    if figures is None:
        figures = component_figures(plan, metrics, per_task)
    components = {}
    for comp, tasks in plan.component_tasks.items():
        if comp == SYSTEM:
            continue
        figures_of = dict(figures[comp])  # the tasks, errors and chain are this call's
        figures_of["tasks"] = list(tasks)
        figures_of["errors"] = sum(1 for e in errors if e["component"] == comp)
        if comp in chained:
            figures_of["chain"] = chained[comp]
        components[comp] = figures_of
    if workers is None:  # every worker in this process
        host = socket.gethostname()
        workers = [
            {"worker": w, "host": host, "pid": os.getpid(), "tasks": plan.worker_tasks(w)}
            for w in range(plan.num_workers)
        ]
    return {
        "name": name,
        "status": status,
        "uptime_secs": round(uptime_secs, 3),
        "num_workers": plan.num_workers,
        "components": components,
        "chains": [list(chain) for chain in plan.chains],  # bolts fused with their upstream
        "workers": workers,
        "errors": _with_chains(errors, chained),
        "stuck": sorted(_with_chains(stuck or [], chained), key=lambda s: s["task"]),
    }


def _with_chains(reports: list[dict], chained: dict[str, list[str]]) -> list[dict]:
    """``reports`` (errors, stuck tasks), each of a chained component with its ``chain``."""
    return [{**r, "chain": chained[r["component"]]} if r.get("component") in chained else r
            for r in reports]
