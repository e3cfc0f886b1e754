"""Stuck tasks and backpressure cycles: a pure detector, and the watchdog thread around it.

A task is stuck when one call of its user code (``execute``, ``next_tuple``, ``ack``,
``fail``) has lasted longer than ``squall.task.stuck.secs`` (default 30). The watchdog looks
at the Python stack of each thread that runs tasks (the worker's loop, the tasks' own
threads) every so often; the same frame of a user method seen for longer than the limit is a
stuck call. It is reported once as an error of its component, with the stack where it
waits, kept in the worker's ``stuck`` map while it lasts, and cleared when the task moves on.
Time is the worker's clock (simulated while a test simulates it); sampling is on real time.

In a chain (``chain.py``) one thread's stack holds the user calls of every member: the
spout's ``next_tuple`` calls the first bolt's ``execute`` in place, and so on. Each call has
its own clock, and the innermost call past the limit names the stuck task (the outer ones
wait for it); the report says which chain it runs fused in.

A worker throttled (backpressure) without a break for ``squall.backpressure.cycle.secs``
(default 30) while the topology's graph has a cycle is reported as a backpressure cycle,
naming the components in it: upstream waits for downstream, which waits for upstream.
"""

from __future__ import annotations

import functools
import gc
import logging
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from squall.runtime.chain import chain_by_component

log = logging.getLogger("squall.stuck")
USER_METHODS = ("execute", "next_tuple", "ack", "fail", "execute_batch")
_FRAMES_LOCK = threading.Lock()  # the watchdogs of one process (LocalCluster) take frames in turn


def current_frames() -> dict[int, FrameType]:
    """``sys._current_frames()``, with the cycle collector held off around it before Python 3.12.

    CPython 3.11 builds the frames while it holds the runtime's lock on the thread list. A
    collection that one of those allocations starts can run a finalizer that releases the
    GIL (a C extension's dealloc: confluent-kafka's, in a test that hung for 28 minutes);
    a thread that then takes the GIL and wants the same lock (another watchdog, a thread
    starting or ending) hangs the whole process (python/cpython#106883; 3.12 collects only
    between bytecodes). The lock keeps two watchdogs from turning the collector back on
    under each other.
    """
    if sys.version_info >= (3, 12):
        return sys._current_frames()
    with _FRAMES_LOCK:
        enabled = gc.isenabled()
        if enabled:
            gc.disable()
        try:
            return sys._current_frames()
        finally:
            if enabled:
                gc.enable()


class StuckTaskError(RuntimeError):
    """A task has been inside one call of its user code for longer than the limit."""


class BackpressureCycleError(RuntimeError):
    """A worker stayed throttled while the topology's graph has a cycle."""


@dataclass
class _Watch:
    frame: Any
    task_id: int
    since: float
    reported: bool = False


@dataclass
class StuckDetector:
    """Pure: feed it what each thread is doing now; it says who became stuck or moved on.

    A thread may be inside several user calls at once (a chain: the spout's ``next_tuple``
    calls a fused bolt's ``execute`` in place). Each call on the stack has its own clock;
    the one reported is the innermost call past the limit: the outer ones only wait for it,
    and a long outer call whose inner calls are each short is itself the stuck one.
    """

    limit: float
    watches: dict[Any, list[_Watch]] = field(default_factory=dict)  # thread -> its calls, outer first
    stuck: dict[int, dict] = field(default_factory=dict)  # task id -> what it is stuck in

    def observe(self, now: float, thread: Any, frame: Any, task_id: int | None,
                describe: Callable[[], dict]) -> list[tuple[str, int, dict]]:
        """``thread`` is inside ``frame`` of task ``task_id`` alone (None: in no user call)."""
        calls = [] if frame is None or task_id is None else [(frame, task_id)]
        return self.observe_stack(now, thread, calls, lambda _: describe())

    def observe_stack(self, now: float, thread: Any, calls: list[tuple[Any, int]],
                      describe: Callable[[int], dict]) -> list[tuple[str, int, dict]]:
        """``thread`` is inside the user ``calls`` (frame, task id), outermost first.

        Returns events: ``("stuck", task_id, info)`` the first time a call is the innermost
        past the limit (``info`` from ``describe(index in calls)`` plus ``secs``), and
        ``("moved", task_id, info)`` when a reported call ended or a call inside it passed
        the limit in its turn.
        """
        old = self.watches.get(thread, [])
        watches: list[_Watch] = []
        for i, (frame, task_id) in enumerate(calls):
            kept = i < len(old) and len(watches) == i and old[i].frame is frame
            watches.append(old[i] if kept else _Watch(frame, task_id, now))
        if watches:
            self.watches[thread] = watches
        else:
            self.watches.pop(thread, None)
        chosen = next((i for i in range(len(watches) - 1, -1, -1)
                       if now - watches[i].since >= self.limit), None)
        events: list[tuple[str, int, dict]] = []
        alive = {id(w) for w in watches}
        for w in old:
            if w.reported and (id(w) not in alive or chosen is None or w is not watches[chosen]):
                w.reported = False
                info = self.stuck.pop(w.task_id, None)
                if info is not None:
                    events.append(("moved", w.task_id, info))
        if chosen is None:
            return events
        watch = watches[chosen]
        if not watch.reported:
            watch.reported = True
            info = {**describe(chosen), "secs": now - watch.since, "thread": thread}
            self.stuck[watch.task_id] = info
            events.append(("stuck", watch.task_id, info))
        elif watch.task_id in self.stuck:
            self.stuck[watch.task_id]["secs"] = now - watch.since
        return events


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The cycles of a directed graph: each strongly connected part with a loop, sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; topologies are small
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1 or v in graph[v]:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


class Watchdog:
    """The thread that samples a worker's task threads (a thin shell around the detector)."""

    def __init__(self, worker: Any, limit: float, cycle_limit: float) -> None:
        self.worker = worker
        self.detector = StuckDetector(limit)
        self.interval = max(0.05, min(1.0, limit / 4))
        self.cycle_limit = cycle_limit
        self._codes: dict[Any, str] = {}  # code object of a user method -> its name
        self._owners: dict[int, Any] = {}  # id(user component) -> its task
        self._chains = chain_by_component(list(getattr(worker.plan, "chains", None) or []))
        for task in worker.tasks.values():
            obj = getattr(task, "spout", None) or getattr(task, "bolt", None)
            if obj is None:
                continue
            self._owners[id(obj)] = task
            for name in USER_METHODS:
                code = getattr(getattr(type(obj), name, None), "__code__", None)
                if code is not None:
                    self._codes[code] = name
        topology = worker.topology
        self._cycles = cycles((inp.component, cid) for cid, spec in topology.components.items()
                              for inp in spec.inputs if not inp.component.startswith(("$", "__")))
        self._throttled_since: float | None = None
        self._cycle_reported = False
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._main, daemon=True,
                                       name=f"squall-watchdog-{worker.index}")

    def start(self) -> None:
        """Start sampling."""
        self.thread.start()

    def stop(self) -> None:
        """Stop sampling (does not wait)."""
        self._stop.set()

    def _main(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check(self.worker.clock())
            except Exception:  # noqa: BLE001 - the watchdog must never take the worker down
                log.exception("watchdog of worker %d", self.worker.index)

    def _threads(self) -> list[threading.Thread]:
        worker = self.worker
        threads = [worker._thread] + [th.thread for th in worker.threads]
        return [t for t in threads if t is not None and t.ident is not None]

    def check(self, now: float) -> None:
        """One sample of every task thread, and of the backpressure state."""
        frames = current_frames()
        for thread in self._threads():
            frame = frames.get(thread.ident)  # type: ignore[arg-type]
            calls = self._user_calls(frame)
            events = self.detector.observe_stack(
                now, thread.name, [(user, task.task_id) for user, _, task in calls],
                functools.partial(self._describe_call, calls, frame))
            for kind, task_id, info in events:
                self._on_event(kind, task_id, info)
        self._check_cycle(now)

    def _user_calls(self, frame: FrameType | None) -> list[tuple[Any, str, Any]]:
        """The frames of user methods on this stack, outermost first, with method and task.

        More than one in a chain: the spout's ``next_tuple`` runs the fused bolts' ``execute``.
        """
        found: list[tuple[Any, str, Any]] = []
        while frame is not None:
            name = self._codes.get(frame.f_code)
            if name is not None:
                task = self._owners.get(id(frame.f_locals.get("self")))
                if task is not None:
                    found.append((frame, name, task))
            frame = frame.f_back
        found.reverse()
        return found

    def _describe_call(self, calls: list[tuple[Any, str, Any]], inner: FrameType | None,
                       index: int) -> dict:
        user, method, task = calls[index]
        return self._describe(task, method, user, inner)

    @staticmethod
    def _describe(task: Any, method: str, user: FrameType, inner: FrameType | None) -> dict:
        stack = "".join(traceback.format_stack(inner)) if inner is not None else ""
        where = inner if inner is not None else user
        return {"component": task.component, "task": task.task_id, "method": method,
                "waits_in": f"{where.f_code.co_name} ({where.f_code.co_filename}:{where.f_lineno})",
                "stack": stack}

    def _on_event(self, kind: str, task_id: int, info: dict) -> None:
        worker = self.worker
        if kind == "stuck":
            chain = self._chains.get(info["component"])
            fused = f" (chained: {' -> '.join(chain)})" if chain else ""
            error = StuckTaskError(
                f"task {task_id} of {info['component']!r}{fused} has been inside {info['method']} for "
                f"{info['secs']:.1f}s (squall.task.stuck.secs={self.detector.limit:g}); it waits "
                f"in {info['waits_in']}")
            worker.errors.report(info["component"], task_id, error, stack=info["stack"])
            # published after its error: whoever reads the stuck map, then the errors, sees both
            worker.stuck[task_id] = {k: v for k, v in info.items() if k != "thread"}
        else:
            worker.stuck.pop(task_id, None)
            log.warning("task %d of %r moved on after being stuck in %s", task_id,
                        info["component"], info["method"])

    def _check_cycle(self, now: float) -> None:
        if not self._cycles:
            return
        if not self.worker.throttled:
            self._throttled_since = None
            self._cycle_reported = False
            return
        if self._throttled_since is None:
            self._throttled_since = now
        if not self._cycle_reported and now - self._throttled_since >= self.cycle_limit:
            self._cycle_reported = True
            names = "; ".join(" -> ".join([*c, c[0]]) for c in self._cycles)
            error = BackpressureCycleError(
                f"worker {self.worker.index} has been throttled for {now - self._throttled_since:.0f}s "
                f"and the topology's graph has a cycle ({names}): components in a cycle can wait "
                f"for each other forever once their queues fill (squall.backpressure.cycle.secs)")
            from squall.runtime.plan import SYSTEM
            self.worker.errors.report(SYSTEM, self.worker.plan.component_tasks[SYSTEM][self.worker.index],
                                      error)


def start_watchdog(worker: Any) -> Watchdog | None:
    """Start ``worker``'s watchdog, unless ``squall.task.stuck.secs`` is 0."""
    limit = float(worker.conf.get("squall.task.stuck.secs", 30) or 0)
    if limit <= 0:
        return None
    cycle = float(worker.conf.get("squall.backpressure.cycle.secs", 30) or 30)
    watchdog = Watchdog(worker, limit, cycle)
    watchdog.start()
    return watchdog
