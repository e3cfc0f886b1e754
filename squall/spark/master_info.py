"""What ``TopologyMaster.info`` reports: per-component figures and each worker's state.

Pure functions of the registry's view (metrics from the workers' last heartbeats, plus
the counters carried over from their dead processes). ``snapshot`` runs on the master's
loop thread, which owns the registry; ``fold`` and ``beat_fold`` on the caller's.
"""

from __future__ import annotations

import copy
import threading
import time

from squall.runtime import clock
from squall.runtime.info import component_figures, topology_info
from squall.runtime.metrics import TaskMetrics
from squall.runtime.plan import SYSTEM, TaskPlan
from squall.spark import coordination as co
from squall.spark.registry import Incarnation, Slot, WorkerRegistry

SUMMED = ("emitted", "acked", "failed")  # what the stored summary adds up (TopologyApp._summary)


def master_info(name: str, status: str, plan: TaskPlan, registry: WorkerRegistry, errors: list[dict],
                started_at: float, versions: dict[int, int], *, per_task: bool = True) -> dict:
    """``get_topology_info`` of a topology on Spark; ``versions`` is each worker's code version."""
    return fold(snapshot(name, status, plan, registry, errors, started_at, versions), per_task=per_task)


def snapshot(name: str, status: str, plan: TaskPlan, registry: WorkerRegistry, errors: list[dict],
             started_at: float, versions: dict[int, int]) -> dict:
    """What ``fold`` needs of the registry, taken on the loop thread (cheap: references, no fold).

    A worker's heartbeat metrics are replaced whole by the next one, never changed in place, so
    the references stay valid; the counters of dead processes are copied (``_retire`` adds to them).
    """
    now = time.monotonic()
    current = registry.current()
    return {"name": name, "status": status, "plan": plan, "errors": errors, "taken": now,
            "uptime_secs": now - started_at, "metrics": [inc.metrics for inc in current],
            "carried": copy.deepcopy(registry.carried),
            "stuck": [s for inc in current for s in inc.stuck],
            "workers": workers_info(plan, registry, versions, now)}


def fold(snap: dict, *, per_task: bool = True, figures: dict[str, dict] | None = None) -> dict:
    """The info of a ``snapshot``, on any thread (the work per task: off the master's loop).

    ``per_task=False`` leaves out each component's ``by_task`` (the topology page and the
    summaries show components and workers; per-task figures are the component page's).
    ``figures``: the components' figures folded earlier (``FoldCache``) instead of the
    snapshot's metrics; everything else is the snapshot's.
    """
    metrics = [] if figures is not None else metrics_of(snap)
    return topology_info(snap["name"], snap["status"], snap["plan"], metrics, snap["errors"],
                         snap["uptime_secs"], workers=snap["workers"], stuck=snap["stuck"],
                         per_task=per_task, figures=figures)


class FoldCache:
    """The topology page's last components fold, served while younger than ``max_age`` seconds.

    Folding 1,000 workers' task metrics costs about 0.4 s of CPU; the workers' figures move
    once per heartbeat interval, so with ``max_age`` that interval the fold is made at most
    once per interval, whatever the number of requests, and a request costs the snapshot and
    the serialisation. The price: a component's figures are up to ``max_age`` older than a
    fresh fold's would be (which lag the workers by up to one heartbeat already), and never
    older than those of the whole info last folded (``offer``). The status, workers, errors,
    stuck tasks and uptime come from each request's own snapshot. A new plan (a live rescale)
    folds again at once.
    """

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self._lock = threading.Lock()  # concurrent requests wait for one fold, not one each
        # when it was ready, when its snapshot was taken, the plan, the figures
        self._last: tuple[float, float, TaskPlan, dict[str, dict]] | None = None

    def fold(self, snap: dict) -> dict:
        """``fold(snap, per_task=False)``, with the last fold's figures while young enough."""
        with self._lock:
            last = self._last
            if last is None or clock.monotonic() - last[0] >= self.max_age or last[2] is not snap["plan"]:
                figures = component_figures(snap["plan"], metrics_of(snap), per_task=False)
                self._keep(snap, figures)
            assert self._last is not None
            return fold(snap, per_task=False, figures=self._last[3])

    def offer(self, snap: dict, whole: dict[str, dict]) -> None:
        """Keep the figures of a whole info's fold of ``snap`` (without ``by_task``) if newer."""
        with self._lock:
            self._keep(snap, {c: {k: v for k, v in f.items() if k != "by_task"} for c, f in whole.items()})

    def _keep(self, snap: dict, figures: dict[str, dict]) -> None:
        last = self._last
        if last is None or last[2] is not snap["plan"] or snap["taken"] >= last[1]:
            # aged from when it is ready: a fold slower than max_age (a starved process)
            # still serves the requests that waited for it and those of the next interval
            self._last = (clock.monotonic(), snap["taken"], snap["plan"], figures)


def metrics_of(snap: dict) -> list[TaskMetrics]:
    """Every task's metrics in a ``snapshot``, with the counters of its dead processes added."""
    plan: TaskPlan = snap["plan"]
    carried: dict = snap["carried"]
    metrics: list[TaskMetrics] = []
    seen = set()
    for dicts in snap["metrics"]:
        for d in dicts:
            metrics.append(co.metrics_from_dict(d, carried.get(d["task"])))
            seen.add(d["task"])
    for task, counters in carried.items():
        if task not in seen and task in plan.task_component:  # not a task a live rescale removed
            metrics.append(co.metrics_from_dict({"component": plan.task_component[task], "task": task},
                                                counters))
    return metrics


def beat_info(status: str, plan: TaskPlan, registry: WorkerRegistry, errors: list[dict],
              started_at: float, versions: dict[int, int]) -> dict:
    """The part of ``master_info`` the application's store heartbeat uses, from counters only.

    Per component only its tasks and the ``SUMMED`` counters: no task's metrics rebuilt, no
    latency sample sorted (``master_info`` does both, too much for every second at 1,000
    workers: docs/scale.md).
    """
    return beat_fold(snapshot("", status, plan, registry, errors, started_at, versions))


def beat_fold(snap: dict) -> dict:
    """``beat_info`` of a ``snapshot``, on any thread (its sums: off the master's loop)."""
    plan: TaskPlan = snap["plan"]
    totals = {c: dict.fromkeys(SUMMED, 0) for c in plan.component_tasks if c != SYSTEM}
    live = [(d.get("task"), d) for dicts in snap["metrics"] for d in dicts]
    for task, d in [*live, *snap["carried"].items()]:  # a task's dead processes count too
        comp = totals.get(plan.task_component.get(task, ""))  # type: ignore[arg-type]
        if comp is not None:
            for key in SUMMED:
                comp[key] += d.get(key, 0)
    return {"status": snap["status"], "num_workers": plan.num_workers,
            "uptime_secs": round(snap["uptime_secs"], 3),
            "components": {c: {"tasks": list(plan.component_tasks[c]), **t} for c, t in totals.items()},
            "workers": snap["workers"], "errors": snap["errors"]}


def workers_info(plan: TaskPlan, registry: WorkerRegistry, versions: dict[int, int],
                 now: float) -> list[dict]:
    """Every worker's entry (``worker_info``) with its code version and assigned host."""
    workers = []
    for slot in registry.slots:
        worker = worker_info(plan, slot, slot.current, now)
        worker["version"] = versions.get(slot.index)
        if plan.worker_hosts:  # where squall.scheduler put it, and the slots it holds there
            worker["assigned_host"] = plan.worker_hosts[slot.index]
            worker["resources"] = plan.worker_resources[slot.index]
        workers.append(worker)
    return workers


def worker_info(plan: TaskPlan, slot: Slot, inc: Incarnation | None, now: float) -> dict:
    """One worker's entry: its process (if one is registered), launches and restarts."""
    if inc is None:
        state = "RESTARTING" if slot.restarts or slot.relaunch_at is not None else "STARTING"
        return {"worker": slot.index, "tasks": plan.worker_tasks(slot.index), "host": None,
                "pid": None, "address": None, "launch": slot.launch, "attempt": None,
                "restarts": slot.restarts, "state": state, "uptime_secs": 0.0,
                "last_error": slot.last_error, "rejected_frames": 0, "corrupt_frames": 0,
                "transfer": {}, "rss_mb": None, "cpu_percent": None, "cpu_secs": None,
                **memory_fields(slot)}
    return {
        "worker": slot.index, "tasks": plan.worker_tasks(slot.index), "host": inc.host,
        "pid": inc.pid, "address": inc.address, "launch": slot.launch, "attempt": inc.attempt,
        "restarts": slot.restarts, "state": "RUNNING" if inc.started else "STARTING",
        "uptime_secs": round(now - inc.registered_at, 3), "last_error": slot.last_error,
        "rejected_frames": inc.rejected_frames, "corrupt_frames": inc.corrupt_frames,
        "transfer": dict(inc.transfer),
        # measured by the worker process itself (squall.runtime.process_usage)
        "rss_mb": inc.usage.get("rss_mb"), "cpu_percent": inc.usage.get("cpu_percent"),
        "cpu_secs": inc.usage.get("cpu_secs"), **memory_fields(slot),
    }


def memory_fields(slot: Slot) -> dict:
    """A worker's memory limit and its stops over it (``squall.spark.memory``)."""
    return {"memory_limit_mb": slot.memory_limit_mb, "memory_stops": slot.memory_stops,
            "memory_stop": slot.memory_stop}
