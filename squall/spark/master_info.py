"""What ``TopologyMaster.info`` reports: per-component figures and each worker's state.

Pure functions of the registry's view (metrics from the workers' last heartbeats, plus
the counters carried over from their dead processes); they run on the master's loop
thread, which owns the registry.
"""

from __future__ import annotations

import time

from squall.runtime.info import topology_info
from squall.runtime.metrics import TaskMetrics
from squall.runtime.plan import TaskPlan
from squall.spark import coordination as co
from squall.spark.registry import Incarnation, Slot, WorkerRegistry


def master_info(name: str, status: str, plan: TaskPlan, registry: WorkerRegistry, errors: list[dict],
                started_at: float, versions: dict[int, int]) -> dict:
    """``get_topology_info`` of a topology on Spark; ``versions`` is each worker's code version."""
    metrics: list[TaskMetrics] = []
    seen = set()
    for inc in registry.current():
        for d in inc.metrics:
            metrics.append(co.metrics_from_dict(d, registry.carried.get(d["task"])))
            seen.add(d["task"])
    for task, counters in registry.carried.items():
        if task not in seen:
            metrics.append(co.metrics_from_dict({"component": plan.task_component[task], "task": task},
                                                counters))
    now = time.monotonic()
    workers = []
    for slot in registry.slots:
        worker = worker_info(plan, slot, slot.current, now)
        worker["version"] = versions.get(slot.index)
        if plan.worker_hosts:  # where squall.scheduler put it, and the slots it holds there
            worker["assigned_host"] = plan.worker_hosts[slot.index]
            worker["resources"] = plan.worker_resources[slot.index]
        workers.append(worker)
    stuck = [s for inc in registry.current() for s in inc.stuck]
    return topology_info(name, status, plan, metrics, errors, now - started_at, workers=workers,
                         stuck=stuck)


def worker_info(plan: TaskPlan, slot: Slot, inc: Incarnation | None, now: float) -> dict:
    """One worker's entry: its process (if one is registered), launches and restarts."""
    if inc is None:
        state = "RESTARTING" if slot.restarts or slot.relaunch_at is not None else "STARTING"
        return {"worker": slot.index, "tasks": plan.worker_tasks(slot.index), "host": None,
                "pid": None, "address": None, "launch": slot.launch, "attempt": None,
                "restarts": slot.restarts, "state": state, "uptime_secs": 0.0,
                "last_error": slot.last_error, "rejected_frames": 0, "corrupt_frames": 0,
                "transfer": {}, "rss_mb": None, "cpu_percent": None, "cpu_secs": None}
    return {
        "worker": slot.index, "tasks": plan.worker_tasks(slot.index), "host": inc.host,
        "pid": inc.pid, "address": inc.address, "launch": slot.launch, "attempt": inc.attempt,
        "restarts": slot.restarts, "state": "RUNNING" if inc.started else "STARTING",
        "uptime_secs": round(now - inc.registered_at, 3), "last_error": slot.last_error,
        "rejected_frames": inc.rejected_frames, "corrupt_frames": inc.corrupt_frames,
        "transfer": dict(inc.transfer),
        # measured by the worker process itself (squall.runtime.process_usage)
        "rss_mb": inc.usage.get("rss_mb"), "cpu_percent": inc.usage.get("cpu_percent"),
        "cpu_secs": inc.usage.get("cpu_secs"),
    }
