"""``get_topology_info``: figures per component and worker, from the workers' tasks."""

from __future__ import annotations

import os
import socket
from collections import defaultdict

from squall.runtime.chain import chain_by_component
from squall.runtime.metrics import TaskMetrics, aggregate
from squall.runtime.plan import SYSTEM, TaskPlan


def topology_info(name: str, status: str, plan: TaskPlan, metrics: list[TaskMetrics],
                  errors: list[dict], uptime_secs: float,
                  workers: list[dict] | None = None, stuck: list[dict] | None = None,
                  per_task: bool = True) -> dict:
    """The info dict of API.md: name, status, components, chains, workers, errors.

    ``stuck``: the tasks inside one call for longer than ``squall.task.stuck.secs`` now
    (component, task, method, secs, waits_in, stack); a task leaves the list when it moves.
    A chained component's figures, errors and stuck entries carry ``chain`` (the chain it
    runs fused in, head first) beside its own name. ``per_task=False`` leaves out each
    component's ``by_task``.
    """
    chained = chain_by_component(plan.chains)
    by_component: dict[str, list[TaskMetrics]] = defaultdict(list)
    for m in metrics:
        by_component[m.component].append(m)
    components = {}
    for comp, tasks in plan.component_tasks.items():
        if comp == SYSTEM:
            continue
        figures = aggregate(by_component.get(comp, []), per_task)
        figures["tasks"] = list(tasks)
        figures["errors"] = sum(1 for e in errors if e["component"] == comp)
        if comp in chained:
            figures["chain"] = chained[comp]
        components[comp] = figures
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
