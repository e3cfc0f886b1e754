"""Tasks to workers: JStorm's ``TaskScheduler.assign``, with heaps so that it scales.

Components are placed one at a time, in the order the caller gives (``task.on.differ.node``
components, then the user's, then the system's). Each unit goes to the worker that is
best by, in order: fewest tasks of its component (a component spreads evenly over the
workers), not yet at its share of all tasks (the quota, ``ceil(tasks / workers)``), most
tuples exchanged with the tasks already there (``affinity``), fewest tasks, lowest index.
These are JStorm's selectors (component count, input components, total count); JStorm
drops a worker at its quota from the pool altogether, here the quota ranks second, so
that a component still spreads evenly when pinned (user-defined, old) workers fill some.

A worker can take a unit when its host (or its own budget, for a user-defined worker
that reserved one) has the unit's CPU, memory and disk slots free, and, for a
``task.on.differ.node`` component, when no task of the component is on its host yet.

Cost: each component builds a heap of the workers that already hold something related
to it; every other worker is equal for it but for its load, so they are served from
one shared heap ordered by load. Placing n units on w workers costs about
``n log w`` plus, per component, the size of its related set.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from squall.scheduler.ledger import Ledger, WorkerState
from squall.scheduler.model import SchedulingError, Unit

_Key = tuple[int, bool, float, int, int]


class TaskPlacer:
    """Places units on a ledger's (host-placed) workers; one instance per ``schedule`` call."""

    def __init__(
        self,
        ledger: Ledger,
        affinity: dict[str, dict[str, float]],
        total_tasks: int,
        topology: str,
        describe: Describe,
    ) -> None:
        self.ledger = ledger
        self.affinity = affinity
        workers = len(ledger.workers)
        self.quota = -(-total_tasks // workers) if workers else 0
        self.topology = topology
        self.describe = describe
        # the shared heap: (tasks, index) of every worker; an entry is stale once tasks changed
        self.loads = [(w.tasks, w.index) for w in ledger.workers]
        heapq.heapify(self.loads)

    def place(self, component: str, units: list[Unit]) -> None:
        """Place every unit of ``component``."""
        ledger = self.ledger
        count = ledger.count[component]
        aff: dict[int, float] = defaultdict(float)
        for other, weight in self.affinity.get(component, {}).items():
            if other != component:
                for index, n in ledger.count[other].items():
                    aff[index] += weight * n
        related = set(count) | set(aff)
        own = [(self._key(ledger.workers[i], count, aff), i) for i in related]
        heapq.heapify(own)
        parked: list[tuple[int, int]] = []  # entries of the shared heap skipped for this component
        barred: set[int] = set()  # workers on a host that already has this differ-node component
        for unit in units:
            worker = self._choose(unit, own, parked, barred, count, aff, related)
            if worker is None:
                raise SchedulingError(self.describe(unit))
            ledger.give(worker, unit)
            related.add(worker.index)
            heapq.heappush(own, (self._key(worker, count, aff), worker.index))
            heapq.heappush(self.loads, (worker.tasks, worker.index))
        for entry in parked:
            heapq.heappush(self.loads, entry)

    def _key(self, w: WorkerState, count: dict[int, int], aff: dict[int, float]) -> _Key:
        return (count.get(w.index, 0), w.tasks >= self.quota, -aff.get(w.index, 0.0), w.tasks, w.index)

    def _choose(
        self,
        unit: Unit,
        own: list,
        parked: list,
        barred: set[int],
        count: dict[int, int],
        aff: dict[int, float],
        related: set[int],
    ) -> WorkerState | None:
        """Pop the best worker that can take ``unit``; put back those skipped for lack of slots."""
        ledger, workers = self.ledger, self.ledger.workers
        unfit_own: list[tuple] = []
        unfit_loads: list[tuple[int, int]] = []
        chosen = None
        while chosen is None:
            a = self._peek_own(own, count, aff)
            b = self._peek_loads(parked, related)
            if a is None and b is None:
                break
            key_b = None if b is None else (0, b[0] >= self.quota, 0.0, b[0], b[1])
            from_own = b is None or (a is not None and a[0] <= key_b)  # type: ignore[operator]
            entry = heapq.heappop(own) if from_own else heapq.heappop(self.loads)
            worker = workers[entry[1]]
            if worker.index in barred:
                if not from_own:
                    parked.append(entry)
                continue
            if ledger.can_take(worker, unit):
                chosen = worker
            elif unit.differ_node and worker.host in ledger.on_hosts[unit.component]:
                barred.add(worker.index)  # for the rest of this component
                if not from_own:
                    parked.append(entry)
            else:
                (unfit_own if from_own else unfit_loads).append(entry)
        for entry in unfit_own:
            heapq.heappush(own, entry)
        for entry in unfit_loads:
            heapq.heappush(self.loads, entry)
        return chosen

    def _peek_own(self, own: list, count: dict[int, int], aff: dict[int, float]) -> tuple | None:
        workers = self.ledger.workers
        while own:
            key, index = own[0]
            if key == self._key(workers[index], count, aff):
                return own[0]
            heapq.heappop(own)
        return None

    def _peek_loads(self, parked: list, related: set[int]) -> tuple[int, int] | None:
        workers = self.ledger.workers
        while self.loads:
            tasks, index = self.loads[0]
            if tasks != workers[index].tasks:
                heapq.heappop(self.loads)  # stale
            elif index in related:
                parked.append(heapq.heappop(self.loads))  # served by ``own`` for this component
            else:
                return self.loads[0]
        return None


class Describe:
    """Builds the refusal for a unit no worker can take (a callable, so tests can read it)."""

    def __init__(self, ledger: Ledger, topology: str, cpu_slot_percent: float, memory_slot_mb: float) -> None:
        self.ledger = ledger
        self.topology = topology
        self.cpu_pct = cpu_slot_percent
        self.mem_mb = memory_slot_mb

    def __call__(self, unit: Unit) -> str:
        """The refusal for ``unit``: what it asks, and what the hosts of the workers have free."""
        ledger = self.ledger
        tasks = ", ".join(map(str, unit.tasks))
        ask = (
            f"{unit.cpu} CPU slots ({unit.cpu * self.cpu_pct:g}% of a core), {unit.memory} memory "
            f"slots ({unit.memory * self.mem_mb:g} MB), {unit.disk} disk slots"
        )
        hosts = sorted({w.host for w in ledger.workers if w.host is not None})
        used = ledger.on_hosts[unit.component] if unit.differ_node else set()
        free = "; ".join(ledger.hosts[h].free() for h in hosts[:8])
        more = f" (and {len(hosts) - 8} more)" if len(hosts) > 8 else ""
        differ = (
            (
                f"; task.on.differ.node: {len(used)} of the {len(hosts)} hosts of its workers "
                f"already hold a task of it"
            )
            if unit.differ_node
            else ""
        )
        budgets = [f"worker {w.index}: {_slots(w.budget_left())}" for w in ledger.workers if w.budget]
        budget = ("; user-defined workers have left: " + ", ".join(budgets)) if budgets else ""
        return (
            f"topology {self.topology!r}: no worker can take task {tasks} of component "
            f"{unit.component!r}, which asks {ask}{differ}; the hosts of its workers have "
            f"{free}{more}{budget}"
        )


def _slots(left: tuple[int | None, int | None]) -> str:
    cpu, memory = ("unbounded" if v is None else v for v in left)
    return f"{cpu} CPU, {memory} memory slots"
