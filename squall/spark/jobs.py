"""The Spark jobs of a topology's workers: one single-partition job per launch.

Each launch runs in a driver thread of its own, blocked in ``collect()`` until its worker
ends, under the job group ``squall/<topology>/<worker>/<launch>`` (so it can be cancelled)
and the FAIR pool ``squall-<topology>``. When the job ends, ``ended`` is called on that job
thread with ``(index, launch, result, error)``; the master posts it to its loop thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.spark.errors import spark_job_error
from squall.spark.placement import worker_rdd
from squall.spark.worker_main import WorkerSpec, spark_task

if TYPE_CHECKING:
    from pyspark import SparkContext

JobEnded = Callable[[int, int, Any, "str | None"], object]  # what it returns is not used


class SparkJobs:
    """Starts, lists and cancels the job threads of one topology (any thread)."""

    def __init__(self, name: str, sc: SparkContext, pins: list[str | None], cpus: list[int | None],
                 ended: JobEnded) -> None:
        self.name = name
        self.sc = sc
        self._pins = pins  # the host each worker's job asks Spark for (squall.scheduler)
        self._cpus = cpus
        self._ended = ended
        self._jobs: dict[tuple[int, int], threading.Thread] = {}
        self._lock = threading.Lock()

    def group(self, index: int, launch: int) -> str:
        """The Spark job group of launch ``launch`` of worker ``index``."""
        return f"squall/{self.name}/{index}/{launch}"

    def cancel(self, index: int, launch: int) -> None:
        """Cancel that launch's Spark job (its worker process is interrupted)."""
        self.sc.cancelJobGroup(self.group(index, launch))

    def start(self, spec: WorkerSpec) -> None:
        """Run worker ``spec.index``'s launch ``spec.launch`` in a new job thread."""
        thread = threading.Thread(target=self._run, args=(spec,), daemon=True,
                                  name=f"squall-job-{self.name}-{spec.index}-{spec.launch}")
        with self._lock:
            self._jobs = {k: t for k, t in self._jobs.items() if t.is_alive()}
            self._jobs[(spec.index, spec.launch)] = thread
        thread.start()

    def threads(self) -> list[tuple[tuple[int, int], threading.Thread]]:
        """((index, launch), thread) of every job started and not yet pruned."""
        with self._lock:
            return list(self._jobs.items())

    def _run(self, spec: WorkerSpec) -> None:
        """A job thread: run worker ``spec.index``'s Spark job until it ends."""
        sc = self.sc
        sc.setJobGroup(self.group(spec.index, spec.launch),
                       f"squall topology {self.name} worker {spec.index}", interruptOnCancel=True)
        sc.setLocalProperty("spark.scheduler.pool", f"squall-{self.name}")
        result, error = None, None
        try:
            rdd = worker_rdd(sc, spec.index, self._pins[spec.index], self._cpus[spec.index])
            result = rdd.mapPartitions(spark_task(spec)).collect()
        except Exception as e:  # noqa: BLE001 - any job failure means the worker is gone
            error = spark_job_error(e)
        self._ended(spec.index, spec.launch, result, error)
