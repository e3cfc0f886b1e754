"""From a topology's task plan, configuration and offers to a ``SchedulingRequest`` (pure)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from squall.api.topology import StormTopology
from squall.runtime.plan import SYSTEM, TaskPlan
from squall.scheduler import keys as K
from squall.scheduler.model import HostOffer, OldWorker, OtherTopology, SchedulingRequest, Unit

# tuples that cross a grouping of this kind count this much for keeping two tasks together
GROUPING_WEIGHT = {"local_or_shuffle": 2.0, "all": 0.5}


def is_system(component: str) -> bool:
    """Ackers, the checkpoint spout, ``__system``: components squall adds (ids start ``__`` or ``$``)."""
    return component.startswith(("__", "$"))


def component_asks(topology: StormTopology, conf: dict, component: str) -> tuple[int, int, int, bool]:
    """(CPU, memory, disk slots per task, task.on.differ.node) of ``component``."""
    cpu_slot = K.number(conf, K.CPU_SLOT_PERCENT, minimum=1e-9)
    memory_slot = K.number(conf, K.MEMORY_SLOT_MB, minimum=1e-9)
    spec = topology.components.get(component)
    if spec is None:  # ackers and __system: one slot each
        return 1, 1, 0, False
    merged = {**conf, **spec.conf}
    where = f"component {component!r}:"
    cpu_pct = spec.cpu_load_percent if spec.cpu_load_percent is not None else spec.conf.get(K.STORM_CPU)
    memory_mb = spec.memory_load_mb if spec.memory_load_mb is not None else spec.conf.get(K.STORM_MEMORY)
    cpu = (
        1
        if cpu_pct is None
        else K.slots(K.number({K.STORM_CPU: cpu_pct}, K.STORM_CPU, where=where), cpu_slot)
    )
    memory = (
        1
        if memory_mb is None
        else K.slots(K.number({K.STORM_MEMORY: memory_mb}, K.STORM_MEMORY, where=where), memory_slot)
    )
    disk = int(K.number(spec.conf, K.TASK_DISK_SLOTS, integer=True, where=where))
    differ = False if is_system(component) else K.flag(merged, K.TASK_ON_DIFFER_NODE, where=where)
    return cpu, memory, disk, differ


def units_of(plan: TaskPlan, topology: StormTopology, conf: dict) -> tuple[Unit, ...]:
    """One unit per executor of ``plan`` (``__system`` excepted: one per worker, never placed)."""
    asks = {c: component_asks(topology, conf, c) for c in plan.component_tasks if c != SYSTEM}
    units = []
    for ex in plan.executors:
        if ex.component == SYSTEM:
            continue
        cpu, memory, disk, differ = asks[ex.component]
        n = len(ex.tasks)
        units.append(
            Unit(ex.component, ex.tasks, cpu * n, memory * n, disk * n, differ, is_system(ex.component))
        )
    return tuple(units)


def affinity(
    topology: StormTopology, traffic: Mapping[str, float] | None = None
) -> dict[str, dict[str, float]]:
    """How much each pair of components exchanges: one per subscription (more for local-or-shuffle).

    Scaled by the tuples the emitter sent (``traffic``: component -> transferred) when known.
    """
    total = sum((traffic or {}).values()) or 1.0
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for spec in topology.components.values():
        for inp in spec.inputs:
            weight = GROUPING_WEIGHT.get(inp.grouping.kind, 1.0)
            if traffic:
                weight *= 1.0 + 10.0 * traffic.get(inp.component, 0.0) / total
            a, b = spec.id, inp.component
            out[a][b] = out[a].get(b, 0.0) + weight
            out[b][a] = out[b].get(a, 0.0) + weight
    return dict(out)


def old_workers(plan: TaskPlan, hosts: Sequence[str | None]) -> tuple[OldWorker, ...]:
    """The previous assignment as the scheduler reads it: each worker's host and tasks."""
    out = []
    for w in range(plan.num_workers):
        tasks = {t: plan.task_component[t] for t in plan.worker_tasks(w) if plan.task_component[t] != SYSTEM}
        out.append(OldWorker(w, hosts[w] if w < len(hosts) else None, tasks))
    return tuple(out)


def build_request(
    name: str,
    plan: TaskPlan,
    topology: StormTopology,
    conf: dict,
    offers: Sequence[HostOffer],
    *,
    previous: Sequence[OldWorker] = (),
    rebalance: bool = False,
    traffic: Mapping[str, float] | None = None,
    others: Sequence[OtherTopology] = (),
) -> SchedulingRequest:
    """The request to schedule ``plan`` of topology ``name`` onto ``offers``.

    ``previous``: where the topology ran before (a rebalance, a restart), used when
    ``squall.use.old.assignment`` is set, and for its hosts on a rebalance. ``others``:
    the other topologies on the cluster (their hosts and isolated hosts).
    """
    cpu_slot = float(K.number(conf, K.CPU_SLOT_PERCENT, minimum=1e-9))
    memory_slot = float(K.number(conf, K.MEMORY_SLOT_MB, minimum=1e-9))
    user = set(c for c in plan.component_tasks if not is_system(c))
    return SchedulingRequest(
        topology=name,
        num_workers=plan.num_workers,
        units=units_of(plan, topology, conf),
        offers=tuple(offers),
        user_workers=K.user_workers(conf, user, cpu_slot, memory_slot),
        old_workers=tuple(previous),
        use_old=K.flag(conf, K.USE_OLD_ASSIGNMENT),
        rebalance=rebalance,
        reserved_workers=int(K.number(conf, K.RESERVED_WORKERS, integer=True)),
        affinity=affinity(topology, traffic),
        cpu_slot_percent=cpu_slot,
        memory_slot_mb=memory_slot,
        others=tuple(o for o in others if o.name != name),
    )
