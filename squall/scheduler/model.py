"""What the scheduler reads and writes: plain frozen data, no Spark, no clock.

Resources are counted in JStorm's slots (seed "资源slot"): a host offers port, CPU,
memory and disk slots; a worker takes one port slot; a task takes one CPU and one
memory slot unless its component asks for more, and a disk slot only when its
component asks for one (held by that task alone). ``None`` in an offer means the
cluster does not bound that resource (Spark does not bound a Python worker's memory
unless ``spark.executor.pyspark.memory`` is set).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from squall.api.errors import InvalidTopologyError


class SchedulingError(InvalidTopologyError):
    """The cluster cannot hold the topology as asked; the message gives what was asked and what exists."""


@dataclass(frozen=True)
class HostOffer:
    """One host's free resources for this topology (what other topologies hold is already taken).

    ``isolated_for``: topology names this host is reserved for (empty: any topology).
    """

    host: str
    ports: int
    cpu: int | None = None
    memory: int | None = None
    disk: int = 0
    isolated_for: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Unit:
    """What the scheduler places: one executor (a run of one component's tasks) and its asks."""

    component: str
    tasks: tuple[int, ...]
    cpu: int = 1
    memory: int = 1
    disk: int = 0
    differ_node: bool = False
    system: bool = False


@dataclass(frozen=True)
class UserWorker:
    """One worker of ``squall.use.userdefine.assignment`` (JStorm's ``WorkerAssignment``).

    ``cpu`` and ``memory`` are slots this worker reserves on its host (None: what its tasks ask).
    """

    host: str | None
    components: dict[str, int]
    cpu: int | None = None
    memory: int | None = None


@dataclass(frozen=True)
class OldWorker:
    """A worker of the previous assignment: where it ran and what it held (task -> component)."""

    index: int
    host: str | None
    tasks: dict[int, str]


@dataclass(frozen=True)
class OtherTopology:
    """Another topology on the same cluster: the hosts its workers use, the hosts it isolates.

    ``isolation``: its ``squall.scheduler.isolation`` (host -> the topologies reserved there);
    ``workers``: how many workers it runs.
    """

    name: str
    hosts: frozenset[str] = frozenset()
    isolation: dict[str, frozenset[str]] = field(default_factory=dict)
    workers: int = 0


@dataclass(frozen=True)
class SchedulingRequest:
    """Everything one scheduling decision depends on.

    ``affinity[c][d]``: how much component ``c`` exchanges with ``d`` (from the
    groupings, weighted by the last metrics on a rebalance); symmetric.
    ``cpu_slot_percent``/``memory_slot_mb`` only make refusal messages speak in cores and MB.
    ``others``: the other topologies running on the cluster, for isolated hosts.
    """

    topology: str
    num_workers: int
    units: tuple[Unit, ...]
    offers: tuple[HostOffer, ...]
    user_workers: tuple[UserWorker, ...] = ()
    old_workers: tuple[OldWorker, ...] = ()
    use_old: bool = False
    rebalance: bool = False
    reserved_workers: int = 0
    affinity: dict[str, dict[str, float]] = field(default_factory=dict)
    cpu_slot_percent: float = 10.0
    memory_slot_mb: float = 128.0
    others: tuple[OtherTopology, ...] = ()


@dataclass(frozen=True)
class WorkerAssignment:
    """One worker: its host, the units it runs and the slots it holds there.

    ``source`` says which step placed it: ``userdefine``, ``old`` or ``default``.
    """

    index: int
    host: str
    units: tuple[Unit, ...]
    cpu: int
    memory: int
    disk: int
    source: str = "default"

    @property
    def tasks(self) -> list[int]:
        """The task ids this worker runs, sorted."""
        return sorted(t for u in self.units for t in u.tasks)


@dataclass(frozen=True)
class Assignment:
    """The scheduler's answer: every worker by index, plus notes on asks it could not honour."""

    workers: tuple[WorkerAssignment, ...]
    notes: tuple[str, ...] = ()

    def task_worker(self) -> dict[int, int]:
        """Task id -> worker index."""
        return {t: w.index for w in self.workers for u in w.units for t in u.tasks}

    def task_host(self) -> dict[int, str]:
        """Task id -> host."""
        return {t: w.host for w in self.workers for u in w.units for t in u.tasks}

    def hosts(self) -> list[str]:
        """Each worker's host, by worker index."""
        return [w.host for w in sorted(self.workers, key=lambda w: w.index)]
