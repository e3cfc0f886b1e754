"""The default scheduler's working state: free slots per host, what each worker holds.

Mutable, private to one ``schedule`` call. ``None`` slots are unbounded.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from squall.scheduler.model import HostOffer, Unit


@dataclass
class HostState:
    """A host's free slots as the scheduling goes on."""

    host: str
    order: int  # position in the offers: the last tie-breaker
    ports: int
    cpu: int | None
    memory: int | None
    disk: int
    workers: int = 0  # this topology's workers placed here

    @classmethod
    def of(cls, offer: HostOffer, order: int) -> HostState:
        """The starting state of ``offer``."""
        return cls(offer.host, order, offer.ports, offer.cpu, offer.memory, offer.disk)

    def fits(self, cpu: int, memory: int, disk: int) -> bool:
        """True when the host has ``cpu``, ``memory`` and ``disk`` slots free."""
        return (
            (self.cpu is None or self.cpu >= cpu)
            and (self.memory is None or self.memory >= memory)
            and self.disk >= disk
        )

    def take(self, cpu: int, memory: int, disk: int) -> None:
        """Hold the slots (the caller checked ``fits``)."""
        if self.cpu is not None:
            self.cpu -= cpu
        if self.memory is not None:
            self.memory -= memory
        self.disk -= disk

    def free(self) -> str:
        """The free slots, for refusal messages."""
        cpu = "unbounded" if self.cpu is None else self.cpu
        memory = "unbounded" if self.memory is None else self.memory
        return f"{self.host}: {self.ports} worker, {cpu} CPU, {memory} memory, {self.disk} disk slots free"


@dataclass
class WorkerState:
    """One worker being filled: its host (once placed) and units.

    ``budget``: the CPU and memory slots a user-defined worker reserved; its tasks
    then draw on it rather than on the host.
    """

    index: int
    source: str = "default"
    host: str | None = None  # the host asked for, then the host given
    units: list[Unit] = field(default_factory=list)
    tasks: int = 0
    cpu: int = 0
    memory: int = 0
    disk: int = 0
    budget: tuple[int | None, int | None] | None = None

    def add(self, unit: Unit) -> None:
        """Record ``unit`` here (the host's slots are the caller's business)."""
        self.units.append(unit)
        self.tasks += len(unit.tasks)
        self.cpu += unit.cpu
        self.memory += unit.memory
        self.disk += unit.disk

    def demand(self) -> tuple[int, int, int]:
        """Slots this worker takes from its host: its budget where it set one, else what its units ask."""
        cpu, memory = self.budget or (None, None)
        return (self.cpu if cpu is None else cpu, self.memory if memory is None else memory, self.disk)

    def budget_left(self) -> tuple[int | None, int | None]:
        """CPU and memory slots left in this worker's budget (None: no budget, the host decides)."""
        cpu, memory = self.budget or (None, None)
        return (None if cpu is None else cpu - self.cpu, None if memory is None else memory - self.memory)


class Ledger:
    """Hosts and workers of one scheduling run, and per-component counts."""

    def __init__(self, offers: list[HostOffer], num_workers: int) -> None:
        self.hosts = {o.host: HostState.of(o, i) for i, o in enumerate(offers)}
        self.workers = [WorkerState(i) for i in range(num_workers)]
        # component -> worker index -> tasks of it there; component -> hosts holding it
        self.count: dict[str, dict[int, int]] = defaultdict(dict)
        self.on_hosts: dict[str, set[str]] = defaultdict(set)

    def can_take(self, worker: WorkerState, unit: Unit) -> bool:
        """True when ``unit`` fits ``worker`` (placed on a host): slots, and differ-node."""
        assert worker.host is not None
        if unit.differ_node and worker.host in self.on_hosts[unit.component]:
            return False
        cpu, memory = worker.budget_left()
        if (cpu is not None and unit.cpu > cpu) or (memory is not None and unit.memory > memory):
            return False
        return self.hosts[worker.host].fits(*self._host_share(worker, unit))

    def give(self, worker: WorkerState, unit: Unit) -> None:
        """Put ``unit`` on ``worker`` (placed on a host), holding its slots."""
        assert worker.host is not None
        self.hosts[worker.host].take(*self._host_share(worker, unit))
        worker.add(unit)
        self.note(worker, unit)
        self.on_hosts[unit.component].add(worker.host)

    def note(self, worker: WorkerState, unit: Unit) -> None:
        """Count ``unit`` as on ``worker``; its host counts once the worker is placed (``hosts._put``)."""
        counts = self.count[unit.component]
        counts[worker.index] = counts.get(worker.index, 0) + len(unit.tasks)

    @staticmethod
    def _host_share(worker: WorkerState, unit: Unit) -> tuple[int, int, int]:
        """What ``unit`` draws from the host: nothing of what the worker's budget already holds."""
        cpu, memory = worker.budget or (None, None)
        return (unit.cpu if cpu is None else 0, unit.memory if memory is None else 0, unit.disk)

    def differ_clash(self, worker: WorkerState, host: str) -> str | None:
        """A ``task.on.differ.node`` component of ``worker`` already on ``host``, if any."""
        for unit in worker.units:
            if unit.differ_node and host in self.on_hosts[unit.component]:
                return unit.component
        return None
