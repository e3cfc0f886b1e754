"""Per-task liveness: each task's last heartbeat, its counters, and when they last moved.

The topology master folds every worker heartbeat in (``observe``); ``report`` says, per
task, when its worker last reported it, when its counters (emitted, transferred, executed,
acked, failed) last changed, and the counters themselves, so ``squall info`` and the REST
API can point at the task of a worker that stopped making progress while its worker still
heartbeats. A spout with nothing to emit and a bolt with nothing to execute are idle too:
idleness is a clue, not a verdict. Each task also has its start time: when its current
process started it (``started``), or its first heartbeat from that process. ``restore``
takes back what a previous master stored (``squall.store.taskrecords``), so a relaunched
master reports every task's last known heartbeat until the new ones arrive. Times come from
``squall.runtime.clock``.
"""

from __future__ import annotations

from typing import Any

from squall.runtime import clock

PROGRESS = ("emitted", "transferred", "executed", "acked", "failed")  # an entry's counters, in this order
ZERO = (0,) * len(PROGRESS)


class TaskLiveness:
    """What the master saw of each task (see the module docstring); not thread-safe."""

    def __init__(self) -> None:
        self._tasks: dict[int, dict[str, Any]] = {}

    def observe(self, worker: int, pid: int, metrics: list[dict]) -> None:
        """One heartbeat of ``worker`` (process ``pid``) with its tasks' metrics."""
        mono, wall = clock.monotonic(), clock.time_ms() / 1000.0
        tasks = self._tasks
        for d in metrics:
            task = d.get("task")
            if task is None:
                continue
            # the five counters (PROGRESS) as a tuple: at 1,000 workers 10,000 tasks beat every
            # second, and a tuple is made and compared at a fraction of a dict's cost
            counters = (d.get("emitted", 0), d.get("transferred", 0), d.get("executed", 0),
                        d.get("acked", 0), d.get("failed", 0))
            old = tasks.get(task)
            if old is not None and old["pid"] == pid and old["worker"] == worker:
                # the same process: update in place
                old["beat_mono"], old["beat_wall"] = mono, wall
                if old["counters"] != counters:
                    old["counters"], old["moved_mono"], old["moved_wall"] = counters, mono, wall
                if old["component"] is None:
                    old["component"] = d.get("component")
                continue
            moved = old is None or old["counters"] != counters or old["pid"] != pid
            tasks[task] = {
                "task": task, "component": d.get("component"), "worker": worker, "pid": pid,
                "counters": counters, "beat_mono": mono, "beat_wall": wall,
                "start_wall": old["start_wall"] if old is not None and old["pid"] == pid else wall,
                "moved_mono": mono if moved else old["moved_mono"],  # type: ignore[index]
                "moved_wall": wall if moved else old["moved_wall"],  # type: ignore[index]
            }

    def started(self, worker: int, pid: int, tasks: dict[int, str]) -> None:
        """Process ``pid`` of ``worker`` started ``tasks`` (task id -> component) now."""
        mono, wall = clock.monotonic(), clock.time_ms() / 1000.0
        for task, component in tasks.items():
            old = self._tasks.get(task)
            same = old is not None and old["pid"] == pid
            self._tasks[task] = {
                "task": task, "component": component, "worker": worker, "pid": pid,
                "counters": old["counters"] if same else ZERO,  # type: ignore[index]
                "beat_mono": mono, "beat_wall": wall, "start_wall": wall,
                "moved_mono": mono, "moved_wall": wall,
            }

    def restore(self, tasks: list[dict]) -> None:
        """Take back a previous master's stored report (``taskrecords.tasks_from``)."""
        mono, wall = clock.monotonic(), clock.time_ms() / 1000.0
        for t in tasks:
            if not isinstance(t.get("task"), int) or t["task"] in self._tasks:
                continue
            beat, moved = float(t.get("last_heartbeat") or 0.0), float(t.get("last_progress") or 0.0)
            self._tasks[t["task"]] = {
                "task": t["task"], "component": t.get("component"), "worker": t.get("worker"),
                "pid": t.get("pid"), "counters": tuple(t.get(k, 0) for k in PROGRESS),
                "beat_mono": mono - (wall - beat), "beat_wall": beat, "start_wall": t.get("start_time"),
                "moved_mono": mono - (wall - moved), "moved_wall": moved,
            }

    def report(self) -> list[dict]:
        """Per task: worker, start time, last heartbeat and last progress (epoch seconds, and ages)."""
        return report_of(self.entries())

    def entries(self) -> list[dict]:
        """A copy of each task's entry (cheap), for ``report_of`` on another thread.

        ``observe`` changes a beating process's entries in place: a copy is what another
        thread may read while this one observes.
        """
        return [dict(t) for t in self._tasks.values()]


def report_of(entries: list[dict]) -> list[dict]:
    """``TaskLiveness.report`` of its ``entries``, by task, with the ages counted to now."""
    now = clock.monotonic()
    return [{"task": t["task"], "component": t["component"], "worker": t["worker"], "pid": t["pid"],
             "start_time": t["start_wall"], "last_heartbeat": t["beat_wall"],
             "heartbeat_age_secs": round(now - t["beat_mono"], 3),
             "last_progress": t["moved_wall"], "idle_secs": round(now - t["moved_mono"], 3),
             **dict(zip(PROGRESS, t["counters"], strict=True))}
            for t in sorted(entries, key=lambda t: t["task"])]
