"""One core per worker process on a ``local[N]`` master (``squall.spark.worker.cpu.pin``).

On a ``local`` master every worker is a Python process of this host, beside the driver
and Spark's JVM, and the kernel places each worker's threads (its loop, ZeroMQ's I/O
thread, the Spark task's thread) on whichever core it likes, afresh for every
submission. With the setting on, the topology master gives worker ``i`` core ``i`` (mod
the cores this process may run on), and the worker pins every thread of its process
there before it opens a socket; threads started later inherit the mask. Cluster masters
are left alone: an executor's cores are Spark's to share among its tasks and other
applications, and squall does not know which are free.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

from squall.spark.context import local_slots

log = logging.getLogger("squall.spark.affinity")


def worker_core(master: str, index: int, enabled: bool, cores: Iterable[int] | None = None) -> int | None:
    """The core worker ``index`` runs on, or None (the setting off, or not a ``local`` master).

    ``cores``: the cores to deal out (default: those this process may run on).
    """
    if not enabled or local_slots(master) is None:
        return None
    allowed = sorted(os.sched_getaffinity(0) if cores is None else cores)
    if not allowed:
        return None
    return allowed[index % len(allowed)]


def pin_process(core: int | None) -> Callable[[], None]:
    """Pin every thread of this process to ``core``; returns what gives the old masks back.

    ``sched_setaffinity`` sets one thread's mask: each thread of ``/proc/self/task`` is set.
    A core this process may not use (a cpuset changed) is logged and skipped.
    """
    if core is None:
        return lambda: None
    before: dict[int, set[int]] = {}
    # the main thread first: its failure means the core is not ours; no /proc: this thread
    for tid in threads() or [0]:
        try:
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, {core})
        except OSError as e:  # the thread ended meanwhile, or the core is not ours
            if tid in (0, os.getpid()):
                log.warning("worker not pinned to core %d: %s", core, e)
                _restore(before)
                return lambda: None

    return lambda: _restore(before)


def _restore(before: dict[int, set[int]]) -> None:
    for tid, mask in before.items():
        try:
            os.sched_setaffinity(tid, mask)
        except OSError:  # the thread has ended
            pass


def threads(pid: int | None = None) -> list[int]:
    """The thread ids of process ``pid`` (default: this one), its main thread first.

    [] once it is gone, or where there is no ``/proc``.
    """
    me = os.getpid() if pid is None else pid
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{me}/task")]
    except OSError:
        return []
    return sorted(tids, key=lambda t: t != me)
