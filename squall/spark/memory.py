"""A worker's memory limit on Spark: from the configuration, kept by the worker process itself.

The limit of worker ``i`` (``worker_limit_mb``), in MB:

- ``topology.worker.max.heap.size.mb`` (Storm's key) when set: the whole process's limit;
- else, when at least one of its tasks' components asks memory (``set_memory_load``, or the
  component key ``topology.component.resources.onheap.memory.mb``): the base allowance
  ``squall.spark.worker.memory.base.mb`` (the Python worker itself: the interpreter, pyspark,
  squall, queues; an idle worker measured 71-103 MB of RSS, docs/scheduler.md) plus each of its
  tasks' ask, a task whose component asks nothing counting one memory slot
  (``squall.scheduler.memory.slot.mb``) as the scheduler counts it, ``__system`` nothing;
- else none: a worker none of whose tasks asks is not limited (as before this limit).

How it is kept (``MemoryWatch``, in ``worker_main._MasterLink.serve``): the worker's Spark
task thread reads the process's RSS every ``CHECK_SECS``, not only at heartbeats, and the
loop thread's user code cannot hold it off (the GIL is handed over every few ms). Over the
limit, the worker sends the master a ``memory`` message (RSS and limit), waits up to
``REASON_WAIT`` for the master's ``stop`` (the proof the reason arrived), and ends its process
with ``os._exit(EXIT_CODE)``: a graceful stop would wait on the loop thread, which may be the
one allocating. The master records the reason with the relaunch (``squall info``, the UI).

The hard backstop (``backstop``) lowers the process's soft ``RLIMIT_DATA`` to ``HARD_FACTOR``
times the limit while the worker runs. ``RLIMIT_DATA`` counts the process's private writable
memory (an idle worker: about 20 MB above its RSS; ``RLIMIT_AS`` counts every mapping, about
240 MB more), so it only fails allocations the RSS check could not see coming: one call that
asks gigabytes at once. Such an allocation raises ``MemoryError`` in the code that made it,
which user code may catch; that is why the RSS check, not the rlimit, is the limit. Spark
reuses its Python workers: the soft limit is given back when the worker ends.
"""

from __future__ import annotations

import resource
from collections.abc import Callable

from squall.api.topology import StormTopology
from squall.runtime.plan import SYSTEM, TaskPlan
from squall.runtime.process_usage import rss_bytes
from squall.scheduler import keys as K
from squall.spark import settings as S

MAX_HEAP = "topology.worker.max.heap.size.mb"  # Storm's: the most memory a worker may use
CHECK_SECS = 0.1  # how often a limited worker reads its RSS
REASON_WAIT = 1.0  # seconds a worker over its limit waits for the master to take the reason
EXIT_CODE = 88  # the exit status of a worker process that ended itself for memory
HARD_FACTOR = 2.0  # the RLIMIT_DATA backstop, in times the limit
MB = 1024 * 1024


def component_ask_mb(topology: StormTopology, component: str) -> float | None:
    """The MB each task of ``component`` asks (``set_memory_load`` or Storm's component key)."""
    spec = topology.components.get(component)
    if spec is None:
        return None
    ask = spec.memory_load_mb if spec.memory_load_mb is not None else spec.conf.get(K.STORM_MEMORY)
    if ask is None:
        return None
    return float(K.number({K.STORM_MEMORY: ask}, K.STORM_MEMORY, where=f"component {component!r}:"))


def worker_limit_mb(topology: StormTopology, conf: dict, plan: TaskPlan, index: int) -> float | None:
    """Worker ``index``'s memory limit in MB, or None (see the module docstring)."""
    own = conf.get(MAX_HEAP)
    if own is not None:
        return float(own)
    slot = float(K.number(conf, K.MEMORY_SLOT_MB, minimum=1e-9))
    asks = {c: component_ask_mb(topology, c) for c in plan.component_tasks if c != SYSTEM}
    tasks = [plan.task_component[t] for t in plan.worker_tasks(index)]
    if not any(asks.get(c) is not None for c in tasks):
        return None
    total = float(S.setting(conf, S.WORKER_MEMORY_BASE))
    for c in tasks:
        if c != SYSTEM:
            ask = asks.get(c)
            total += slot if ask is None else ask
    return total


def reason(rss_mb: float, limit_mb: float) -> str:
    """The one line a stop for memory is recorded with."""
    return f"stopped for memory: RSS {rss_mb:.0f} MB over its limit of {limit_mb:.0f} MB"


class MemoryWatch:
    """Reads the process's RSS against ``limit_mb`` (one thread: the worker's Spark task thread)."""

    def __init__(self, limit_mb: float, rss: Callable[[], int] = rss_bytes) -> None:
        self.limit_mb = limit_mb
        self._rss = rss

    def over(self) -> float | None:
        """The RSS in MB when it is above the limit, else None."""
        rss = round(self._rss() / MB, 1)
        return rss if rss > self.limit_mb else None


def backstop(limit_mb: float | None) -> Callable[[], None]:
    """Lower the soft ``RLIMIT_DATA`` to ``HARD_FACTOR`` x ``limit_mb``; returns what gives it back.

    The hard limit is left as it was, so the soft one can be raised again (Spark reuses the
    process for its next task).
    """
    if limit_mb is None:
        return lambda: None
    before = resource.getrlimit(resource.RLIMIT_DATA)
    soft = int(HARD_FACTOR * limit_mb * MB)
    if before[1] != resource.RLIM_INFINITY:
        soft = min(soft, before[1])
    if before[0] != resource.RLIM_INFINITY and before[0] <= soft:
        return lambda: None  # already as low (spark.executor.pyspark.memory sets RLIMIT_AS, not this)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, before[1]))
    return lambda: resource.setrlimit(resource.RLIMIT_DATA, before)
