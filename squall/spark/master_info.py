"""What ``TopologyMaster.info`` reports: per-component figures and each worker's state.

Pure functions of the registry's view (metrics from the workers' last heartbeats, plus
the counters carried over from their dead processes). ``snapshot`` runs on the master's
loop thread, which owns the registry; ``fold`` and ``beat_fold`` on the caller's; ``Pages``
folds the components' figures the pages are served from on a thread of its own.
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable

from squall.runtime import clock
from squall.runtime.info import component_figures, topology_info
from squall.runtime.metrics import TaskMetrics
from squall.runtime.plan import SYSTEM, TaskPlan
from squall.spark import coordination as co
from squall.spark.registry import Incarnation, Slot, WorkerRegistry

log = logging.getLogger("squall.spark.master")
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
    ``figures``: the components' figures folded earlier (``Pages``) instead of the
    snapshot's metrics; everything else is the snapshot's.
    """
    metrics = [] if figures is not None else metrics_of(snap)
    return topology_info(snap["name"], snap["status"], snap["plan"], metrics, snap["errors"],
                         snap["uptime_secs"], workers=snap["workers"], stuck=snap["stuck"],
                         per_task=per_task, figures=figures)


class Published:
    """One fold of the components' figures, never changed once published (``Pages``).

    ``figures``: each component's, with ``by_task`` or without it, as folded. ``ready``:
    when it was published (``clock``); ``taken``: when its snapshot was taken.
    """

    __slots__ = ("figures", "plan", "ready", "taken")

    def __init__(self, plan: TaskPlan, taken: float, ready: float, figures: dict[str, dict]) -> None:
        self.plan, self.taken, self.ready, self.figures = plan, taken, ready, figures


BRIEF, WHOLE = 0, 1  # the two kinds of figures ``Pages`` publishes: without and with ``by_task``


class Pages:
    """The components' figures every page is served from, folded ahead on a thread of its own.

    Folding 1,000 workers' task metrics costs 0.3 s of CPU (0.5 s with each task's
    figures): too much for every request, or for every second. A thread of the master folds
    a snapshot (``take``, from the loop thread) every ``every`` seconds and when a request
    asks for a fresher one, and publishes the result (``Published``, never changed after);
    requests only read what is published:

    - the topology page (``per_task=False``) is served the last publication at once,
      whatever its age; one older than ``max_age`` (one heartbeat interval) is folded again
      in the background, for the next request. Its figures are at most ``every`` seconds
      plus a fold old; for a reader who asks more often, its own interval plus a fold.
    - the whole info (the component page, ``/metrics``, ``squall info``) is served the last
      publication with per-task figures while it is younger than ``max_age``; else the
      request asks for a fold and waits for it (made on this thread, not the request's).

    A fold with per-task figures publishes both kinds. A new plan (a live rescale) is never
    served an older plan's figures: the request waits. Once closed (the master stopped) a
    request folds on its own thread.
    """

    def __init__(self, take: Callable[[], dict], max_age: float, every: float, name: str) -> None:
        self.max_age = max_age
        self.every = every  # seconds between two folds nobody asked for (inf: none)
        self.folds = 0  # folds made on the pages' thread
        self._take = take
        self._name = name
        self._cond = threading.Condition()
        self._last: list[Published | None] = [None, None]  # by kind: BRIEF, WHOLE
        self._asked = [0, 0]  # asks for a fold, numbered, by kind
        self._answered = [0, 0]  # the asks that the last fold answered (its snapshot came after them)
        self._closed = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start folding (idempotent; a request starts it too)."""
        with self._cond:
            self._start()

    def close(self) -> None:
        """Stop folding; waiting requests fold on their own thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def figures(self, snap: dict, per_task: bool, timeout: float) -> dict[str, dict]:
        """The components' figures for ``snap``'s plan (shared: not to be changed); see the class."""
        kind = WHOLE if per_task else BRIEF
        with self._cond:
            self._start()
            last, brief = self._last[kind], self._last[BRIEF]
            usable = last is not None and last.plan is snap["plan"]
            # never older figures than a page already served (a brief fold may be newer)
            newest = kind == BRIEF or brief is None or last is not None and last.taken >= brief.taken
            if usable and newest and clock.monotonic() - last.ready < self.max_age:  # type: ignore[union-attr]
                return last.figures  # type: ignore[union-attr]
            if not self._closed:
                self._asked[kind] += 1
                ask = self._asked[kind]
                self._cond.notify_all()
                if usable and kind == BRIEF:
                    return last.figures  # type: ignore[union-attr]

                def answered() -> bool:
                    got = self._last[kind]
                    return self._closed or (self._answered[kind] >= ask and got is not None
                                            and got.plan is snap["plan"])
                if not self._cond.wait_for(answered, timeout):
                    raise TimeoutError(f"topology {self._name!r}: its figures were not folded within "
                                       f"{timeout:.0f}s")
                if not self._closed:
                    return self._last[kind].figures  # type: ignore[union-attr]
        return component_figures(snap["plan"], metrics_of(snap), per_task=per_task)  # closed

    def _start(self) -> None:
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name=f"squall-master-{self._name}-pages",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._asked != self._answered,
                                    None if math.isinf(self.every) else self.every)
                if self._closed:
                    return
                asked = list(self._asked)  # read before the snapshot is taken: it answers these
            kind = WHOLE if asked[WHOLE] > self._answered[WHOLE] else BRIEF
            try:
                snap = self._take()
                figures = component_figures(snap["plan"], metrics_of(snap), per_task=kind == WHOLE)
            except Exception:  # noqa: BLE001 - the pages must outlive one bad fold
                log.exception("topology %r: folding the pages' figures failed", self._name)
                time.sleep(0.5)
                continue
            folded = {BRIEF: figures} if kind == BRIEF else {
                WHOLE: figures, BRIEF: {c: {k: v for k, v in f.items() if k != "by_task"}
                                        for c, f in figures.items()}}
            with self._cond:
                ready = clock.monotonic()  # aged from when it is ready, not from its snapshot
                for k, figs in folded.items():
                    last = self._last[k]
                    if last is None or last.plan is not snap["plan"] or snap["taken"] >= last.taken:
                        self._last[k] = Published(snap["plan"], snap["taken"], ready, figs)
                    self._answered[k] = asked[k]
                self.folds += 1
                self._cond.notify_all()


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
    sums = {c: [0] * len(SUMMED) for c in plan.component_tasks if c != SYSTEM}
    of_task = {t: sums[c] for t, c in plan.task_component.items() if c in sums}
    # 10,000 tasks every second at 1,000 workers: one lookup and three adds each, no more
    live = (d for dicts in snap["metrics"] for d in dicts)
    carried = (dict(d, task=task) for task, d in snap["carried"].items())  # dead processes count too
    for d in itertools.chain(live, carried):
        row = of_task.get(d.get("task"))  # type: ignore[arg-type]
        if row is not None:
            row[0] += d.get("emitted", 0)
            row[1] += d.get("acked", 0)
            row[2] += d.get("failed", 0)
    totals = {c: dict(zip(SUMMED, row, strict=True)) for c, row in sums.items()}
    return {"status": snap["status"], "num_workers": plan.num_workers,
            "uptime_secs": round(snap["uptime_secs"], 3),
            "components": {c: {"tasks": list(plan.component_tasks[c]), **t} for c, t in totals.items()},
            "workers": snap["workers"], "errors": snap["errors"]}


def workers_info(plan: TaskPlan, registry: WorkerRegistry, versions: dict[int, int],
                 now: float) -> list[dict]:
    """Every worker's entry (``worker_info``) with its code version and assigned host."""
    workers = []
    tasks = plan.tasks_by_worker()
    for slot in registry.slots:
        worker = worker_info(plan, slot, slot.current, now, tasks[slot.index])
        worker["version"] = versions.get(slot.index)
        if plan.worker_hosts:  # where squall.scheduler put it, and the slots it holds there
            worker["assigned_host"] = plan.worker_hosts[slot.index]
            worker["resources"] = plan.worker_resources[slot.index]
        workers.append(worker)
    return workers


def worker_info(plan: TaskPlan, slot: Slot, inc: Incarnation | None, now: float,
                tasks: list[int] | None = None) -> dict:
    """One worker's entry: its process (if one is registered), launches and restarts.

    ``tasks``: the worker's tasks if known (``TaskPlan.tasks_by_worker``); shared, not copied.
    """
    if tasks is None:
        tasks = plan.worker_tasks(slot.index)
    if inc is None:
        state = "RESTARTING" if slot.restarts or slot.relaunch_at is not None else "STARTING"
        return {"worker": slot.index, "tasks": tasks, "host": None,
                "pid": None, "address": None, "launch": slot.launch, "attempt": None,
                "restarts": slot.restarts, "state": state, "uptime_secs": 0.0,
                "last_error": slot.last_error, "rejected_frames": 0, "corrupt_frames": 0,
                "transfer": {}, "rss_mb": None, "cpu_percent": None, "cpu_secs": None,
                **memory_fields(slot)}
    return {
        "worker": slot.index, "tasks": tasks, "host": inc.host,
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
