"""Workers to hosts: asked-for hosts first, then the host with the most free resources.

JStorm's ``putAllWorkerToSupervisor``: a worker that names a host (user-defined or
old) goes there when the host has a free worker slot and the slots it needs; the
others, one at a time, go to the host that holds the fewest of this topology's
workers and, among those, has the most free worker, CPU and memory slots (seed:
"计算每个Supervisor上剩余资源权值,取权值最高的Supervisor"). Spreading the topology's
workers over hosts first gives ``task.on.differ.node`` and failures the most hosts.
"""

from __future__ import annotations

import heapq
import math

from squall.scheduler.ledger import HostState, Ledger, WorkerState
from squall.scheduler.model import SchedulingError

_Key = tuple[int, int, float, float, int]


def _key(h: HostState) -> _Key:
    cpu = math.inf if h.cpu is None else h.cpu
    memory = math.inf if h.memory is None else h.memory
    return (h.workers, -h.ports, -cpu, -memory, h.order)


def _put(ledger: Ledger, worker: WorkerState, host: HostState) -> None:
    worker.host = host.host
    host.ports -= 1
    host.workers += 1
    host.take(*worker.demand())
    for unit in worker.units:
        ledger.on_hosts[unit.component].add(host.host)


def place_asked(ledger: Ledger, notes: list[str]) -> None:
    """Put each worker that names a host there, when it can; otherwise forget the host."""
    for worker in ledger.workers:
        if worker.host is None:
            continue
        host = ledger.hosts.get(worker.host)
        why = None
        if host is None:
            why = "no such host in the cluster" if worker.source == "userdefine" else "the host is gone"
        elif host.ports < 1:
            why = "no free worker slot there"
        elif (clash := ledger.differ_clash(worker, host.host)) is not None:
            why = f"a task of {clash!r} (task.on.differ.node) is already there"
        elif not host.fits(*worker.demand()):
            cpu, memory, disk = worker.demand()
            why = f"it needs {cpu} CPU, {memory} memory, {disk} disk slots; {host.free()}"
        if why is None:
            assert host is not None
            _put(ledger, worker, host)
        else:
            notes.append(
                f"worker {worker.index} ({worker.source}) asked for host {worker.host}: "
                f"{why}; placed by the default scheduler instead"
            )
            worker.host = None


def place_balanced(ledger: Ledger, topology: str) -> None:
    """Put every worker without a host on the best host that can hold it."""
    heap = [(_key(h), h.host) for h in ledger.hosts.values() if h.ports > 0]
    heapq.heapify(heap)
    for worker in ledger.workers:
        if worker.host is not None:
            continue
        demand = worker.demand()
        unfit = []
        chosen = None
        while heap:
            key, name = heapq.heappop(heap)
            host = ledger.hosts[name]
            if key != _key(host) or host.ports < 1:
                continue  # stale: a fresher entry exists, or the host is full
            if host.fits(*demand) and ledger.differ_clash(worker, name) is None:
                chosen = host
                break
            unfit.append((key, name))
        for entry in unfit:
            heapq.heappush(heap, entry)
        if chosen is None:
            raise SchedulingError(_no_host(ledger, topology, worker, demand))
        _put(ledger, worker, chosen)
        if chosen.ports > 0:
            heapq.heappush(heap, (_key(chosen), chosen.host))


def _no_host(ledger: Ledger, topology: str, worker: WorkerState, demand: tuple[int, int, int]) -> str:
    free = "; ".join(h.free() for h in list(ledger.hosts.values())[:8])
    more = f" (and {len(ledger.hosts) - 8} more hosts)" if len(ledger.hosts) > 8 else ""
    return (
        f"topology {topology!r}: no host can take worker {worker.index} ({worker.source}), "
        f"which needs 1 worker, {demand[0]} CPU, {demand[1]} memory, {demand[2]} disk slots; "
        f"{free}{more}"
    )
