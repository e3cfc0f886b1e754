"""Per-task liveness: each task's last heartbeat, its counters, and when they last moved.

The topology master folds every worker heartbeat in (``observe``); ``report`` says, per
task, when its worker last reported it, when its counters (emitted, transferred, executed,
acked, failed) last changed, and the counters themselves, so ``squall info`` and the REST
API can point at the task of a worker that stopped making progress while its worker still
heartbeats. A spout with nothing to emit and a bolt with nothing to execute are idle too:
idleness is a clue, not a verdict. Times come from ``squall.runtime.clock``.
"""

from __future__ import annotations

from typing import Any

from squall.runtime import clock

PROGRESS = ("emitted", "transferred", "executed", "acked", "failed")


class TaskLiveness:
    """What the master saw of each task (see the module docstring); not thread-safe."""

    def __init__(self) -> None:
        self._tasks: dict[int, dict[str, Any]] = {}

    def observe(self, worker: int, pid: int, metrics: list[dict]) -> None:
        """One heartbeat of ``worker`` (process ``pid``) with its tasks' metrics."""
        mono, wall = clock.monotonic(), clock.time_ms() / 1000.0
        for d in metrics:
            task = d.get("task")
            if task is None:
                continue
            counters = {k: d.get(k, 0) for k in PROGRESS}
            old = self._tasks.get(task)
            moved = old is None or old["counters"] != counters or old["pid"] != pid
            self._tasks[task] = {
                "task": task, "component": d.get("component"), "worker": worker, "pid": pid,
                "counters": counters, "beat_mono": mono, "beat_wall": wall,
                "moved_mono": mono if moved else old["moved_mono"],  # type: ignore[index]
                "moved_wall": wall if moved else old["moved_wall"],  # type: ignore[index]
            }

    def report(self) -> list[dict]:
        """Per task: worker, last heartbeat and last progress (epoch seconds, and ages)."""
        now = clock.monotonic()
        return [{"task": t["task"], "component": t["component"], "worker": t["worker"], "pid": t["pid"],
                 "last_heartbeat": t["beat_wall"], "heartbeat_age_secs": round(now - t["beat_mono"], 3),
                 "last_progress": t["moved_wall"], "idle_secs": round(now - t["moved_mono"], 3),
                 **t["counters"]}
                for _, t in sorted(self._tasks.items())]
