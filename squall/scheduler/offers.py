"""Offers from what a cluster reports: executors (host, cores) become hosts with slots (pure).

A host offers one worker slot per task slot of its executors (a worker is one
long-running task: ``cores // task_cpus``), ``cores * 100 / cpu.slot.percent`` CPU
slots, memory slots when the cluster bounds a worker's memory (Spark:
``spark.executor.pyspark.memory``; else ``squall.scheduler.host.memory.mb``; else
unbounded), ``squall.scheduler.host.disk.slots`` disk slots, minus what other running
topologies hold there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from squall.scheduler import keys as K
from squall.scheduler.model import Assignment, HostOffer


def offers_from_executors(
    executors: Iterable[tuple[str, int]],
    conf: dict,
    *,
    task_cpus: int = 1,
    memory_mb_per_executor: float | None = None,
    taken: Sequence[Assignment] = (),
) -> list[HostOffer]:
    """Hosts in first-seen order from ``executors`` (host, cores), less what ``taken`` holds.

    ``taken``: the assignments of the other topologies running on the same cluster.
    """
    cores: dict[str, int] = defaultdict(int)
    ports: dict[str, int] = defaultdict(int)
    executors_on: dict[str, int] = defaultdict(int)
    for host, n in executors:
        cores[host] += n
        ports[host] += n // max(1, task_cpus)
        executors_on[host] += 1
    cpu_slot = float(K.number(conf, K.CPU_SLOT_PERCENT, minimum=1e-9))
    memory_slot = float(K.number(conf, K.MEMORY_SLOT_MB, minimum=1e-9))
    host_memory = K.get(conf, K.HOST_MEMORY_MB)
    isolated = K.isolation(conf)
    used = usage(taken)
    offers = []
    for host in cores:
        if memory_mb_per_executor is not None:
            memory: int | None = int(memory_mb_per_executor * executors_on[host] // memory_slot)
        elif host_memory is not None:
            memory = int(float(K.number(conf, K.HOST_MEMORY_MB)) // memory_slot)
        else:
            memory = None
        u = used.get(host, (0, 0, 0, 0))
        offers.append(
            HostOffer(
                host=host,
                ports=ports[host] - u[0],
                cpu=int(cores[host] * 100 // cpu_slot) - u[1],
                memory=None if memory is None else memory - u[2],
                disk=K.host_disk_slots(conf, host) - u[3],
                isolated_for=isolated.get(host, frozenset()),
            )
        )
    return offers


def usage(assignments: Sequence[Assignment]) -> Mapping[str, tuple[int, int, int, int]]:
    """Host -> (workers, CPU, memory, disk slots) held by ``assignments``."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for a in assignments:
        for w in a.workers:
            row = out[w.host]
            row[0] += 1
            row[1] += w.cpu
            row[2] += w.memory
            row[3] += w.disk
    return {h: (r[0], r[1], r[2], r[3]) for h, r in out.items()}
