"""JStorm's default scheduler, in the documents' order (seed 001, ``DefaultTopologyScheduler``).

1. Refuse at once what the cluster cannot hold: too few worker slots, too few hosts for a
   ``task.on.differ.node`` component, more CPU, memory or disk than exists.
2. User-defined workers (``squall.use.userdefine.assignment``) take their hosts and tasks.
3. With ``squall.use.old.assignment``, the previous workers keep their hosts and the tasks
   they held that still exist; on a rebalance without it, the previous workers' hosts are
   reused (JStorm's ``ASSIGN_TYPE_REBALANCE``) but tasks are dealt again.
4. Workers go to hosts (``hosts``): asked-for hosts when they can, the rest balanced.
   An ask that cannot be met falls to the next step, with a note (seed: "当资源无法满足
   需求时,该任务放到下一级任务分配算法").
5. Tasks go to workers (``tasks``): ``task.on.differ.node`` components first, then the
   user's, then the system's (ackers, the checkpoint spout).
"""

from __future__ import annotations

from collections import defaultdict

from squall.scheduler import keys as K
from squall.scheduler.hosts import place_asked, place_balanced
from squall.scheduler.ledger import Ledger, WorkerState
from squall.scheduler.model import (
    Assignment,
    HostOffer,
    SchedulingError,
    SchedulingRequest,
    Unit,
    WorkerAssignment,
)
from squall.scheduler.tasks import Describe, TaskPlacer


class DefaultScheduler:
    """The default strategy (``squall.scheduler``'s default); stateless."""

    def schedule(self, request: SchedulingRequest) -> Assignment:
        """The assignment of ``request``, or ``SchedulingError`` saying what is missing."""
        offers, barred = usable_offers(request)
        try:
            return self._schedule(request, offers, barred)
        except SchedulingError as e:
            if not barred:
                raise
            # the refusal may be only because of the hosts other topologies hold: say which
            raise SchedulingError(f"{e}; {'; '.join(barred)}") from None

    def _schedule(self, request: SchedulingRequest, offers: list[HostOffer], barred: list[str]) -> Assignment:
        check_cluster(request, offers)
        ledger = Ledger(offers, request.num_workers)
        pool = {u.tasks: u for u in request.units}  # units still to place, in task order
        notes: list[str] = [f"{why}: not used" for why in barred]
        pin_user_defined(request, ledger, pool, notes)
        if request.use_old:
            pin_old(request, ledger, pool)
        elif request.rebalance:
            reuse_old_hosts(request, ledger)
        place_asked(ledger, notes)
        place_balanced(ledger, request.topology)
        check_differ_hosts(request, ledger, pool)
        total = sum(len(u.tasks) for u in request.units)
        describe = Describe(ledger, request.topology, request.cpu_slot_percent, request.memory_slot_mb)
        placer = TaskPlacer(ledger, request.affinity, total, request.topology, describe)
        for component, units in placing_order(list(pool.values())):
            placer.place(component, units)
        return Assignment(tuple(_result(w) for w in ledger.workers), tuple(notes))


def usable_offers(request: SchedulingRequest) -> tuple[list[HostOffer], list[str]]:
    """Hosts isolated for this topology if any, else every host not isolated for another.

    The other topologies of the cluster (``request.others``) count as well: a host one of
    them isolates without naming this topology is left out, and so is a host isolated for
    this topology that another topology's workers use. Returns the usable hosts and one
    line per host left out for that reason, naming the host and the other topology.
    """
    name = request.topology
    claims: dict[str, str] = {}  # host -> another topology that isolates it, without this one
    users: dict[str, list[str]] = defaultdict(list)  # host -> the other topologies with workers there
    for other in request.others:
        for host, names in other.isolation.items():
            if name not in names:
                claims.setdefault(host, other.name)
        for host in other.hosts:
            users[host].append(other.name)
    isolated = any(name in o.isolated_for for o in request.offers)
    usable, barred = [], []
    for o in request.offers:
        if (name not in o.isolated_for) if isolated else bool(o.isolated_for):
            continue  # not this topology's: isolated for others, or it has hosts of its own
        strangers = [u for u in users.get(o.host, ()) if u not in o.isolated_for] if isolated else []
        if o.host in claims:
            barred.append(f"host {o.host} is isolated for topology {claims[o.host]!r} ({K.ISOLATION})")
        elif strangers:
            barred.append(f"host {o.host}, isolated for {name!r} ({K.ISOLATION}), runs workers of "
                          f"topology {strangers[0]!r}")
        else:
            usable.append(o)
    return usable, barred


def _hosts_text(offers: list[HostOffer], what: str = "ports") -> str:
    shown = ", ".join(f"{o.host}: {getattr(o, what)}" for o in offers[:8])
    return shown + (f", ... {len(offers) - 8} more" if len(offers) > 8 else "")


def check_cluster(request: SchedulingRequest, offers: list[HostOffer]) -> None:
    """Refuse what no assignment could give: the numbers asked against those that exist."""
    name, workers = request.topology, request.num_workers
    ports = sum(max(0, o.ports) for o in offers)
    hosts = [o for o in offers if o.ports > 0]
    if ports - request.reserved_workers < workers:
        reserved = (
            f", {request.reserved_workers} of them reserved (squall.scheduler.reserved.workers)"
            if request.reserved_workers
            else ""
        )
        raise SchedulingError(
            f"topology {name!r} asks for {workers} workers (topology.workers); the cluster has "
            f"{ports} free worker slots on {len(hosts)} hosts ({_hosts_text(offers) or 'none'}){reserved}"
        )
    by_comp: dict[str, list[Unit]] = defaultdict(list)
    for unit in request.units:
        by_comp[unit.component].append(unit)
    for comp, units in sorted(by_comp.items()):
        _check_component(name, comp, units, hosts, workers)
    _check_total(request, offers, "cpu", "CPU", request.cpu_slot_percent, "% of a core")
    _check_total(request, offers, "memory", "memory", request.memory_slot_mb, " MB")
    _check_total(request, offers, "disk", "disk", None, "")


def _check_component(name: str, comp: str, units: list[Unit], hosts: list[HostOffer], workers: int) -> None:
    if not units[0].differ_node:
        return
    n = sum(len(u.tasks) for u in units)
    if any(len(u.tasks) > 1 for u in units):
        raise SchedulingError(
            f"component {comp!r} asks task.on.differ.node for {n} tasks, but its {len(units)} "
            f"executors hold several tasks each and an executor runs on one host: set its "
            f"parallelism to its task count ({n})"
        )
    if n > len(hosts):
        listed = ", ".join(o.host for o in hosts[:8]) + (", ..." if len(hosts) > 8 else "")
        raise SchedulingError(
            f"component {comp!r} asks task.on.differ.node for {n} tasks; the cluster has "
            f"{len(hosts)} hosts with a free worker slot ({listed or 'none'})"
        )
    if n > workers:
        raise SchedulingError(
            f"component {comp!r} asks task.on.differ.node for {n} tasks; topology {name!r} has "
            f"{workers} workers (topology.workers), and each task needs a worker on a host of its own"
        )


def _check_total(
    request: SchedulingRequest, offers: list[HostOffer], attr: str, label: str, slot: float | None, unit: str
) -> None:
    asked = sum(getattr(u, attr) for u in request.units)
    budgets = [getattr(w, attr) for w in request.user_workers if attr != "disk"]
    asked = max(asked, sum(b for b in budgets if b is not None))
    values = [getattr(o, attr) for o in offers]
    if asked == 0 or any(v is None for v in values):
        return
    free = sum(values)
    if asked > free:
        size = f" ({asked * slot:g}{unit} asked, {free * slot:g}{unit} free)" if slot else ""
        raise SchedulingError(
            f"topology {request.topology!r} asks {asked} {label} slots for its tasks; the cluster "
            f"has {free} free{size} ({_hosts_text(offers, attr)})"
        )


def pin_user_defined(
    request: SchedulingRequest, ledger: Ledger, pool: dict[tuple[int, ...], Unit], notes: list[str]
) -> None:
    """Give each user-defined worker its host, budget and the tasks it names (JStorm's first step)."""
    users = request.user_workers
    if len(users) > request.num_workers:
        raise SchedulingError(
            f"squall.use.userdefine.assignment lists {len(users)} workers; topology "
            f"{request.topology!r} has {request.num_workers} (topology.workers)"
        )
    left: dict[str, list[Unit]] = defaultdict(list)
    for unit in pool.values():
        left[unit.component].append(unit)
    asked: dict[str, int] = defaultdict(int)
    for user in users:
        for comp, n in user.components.items():
            asked[comp] += n
    for comp, n in sorted(asked.items()):
        have = sum(len(u.tasks) for u in left.get(comp, []))
        if n > have:
            raise SchedulingError(
                f"squall.use.userdefine.assignment asks {n} tasks of component {comp!r} in all; it has {have}"
            )
    for index, user in enumerate(users):
        worker = ledger.workers[index]
        worker.source, worker.host = "userdefine", user.host
        if user.cpu is not None or user.memory is not None:
            worker.budget = (user.cpu, user.memory)
        for comp, n in user.components.items():
            _take(ledger, worker, left[comp], pool, n, notes)
        _check_budget(request, worker)


def _take(
    ledger: Ledger, worker: WorkerState, units: list[Unit], pool: dict, n: int, notes: list[str]
) -> None:
    taken = 0
    while taken < n:
        if not units:
            raise SchedulingError(
                f"squall.use.userdefine.assignment: worker {worker.index} asks {n} tasks of a component "
                f"whose executors the workers before it took whole (an executor's tasks stay together): "
                f"set the component's parallelism to its task count")
        unit = units.pop(0)
        if unit.differ_node and any(u.component == unit.component for u in worker.units):
            raise SchedulingError(
                f"squall.use.userdefine.assignment puts {n} tasks of component {unit.component!r} "
                f"in worker {worker.index}, but it sets task.on.differ.node (one task per host)"
            )
        del pool[unit.tasks]
        worker.add(unit)
        ledger.note(worker, unit)
        taken += len(unit.tasks)
    if taken > n:
        notes.append(
            f"worker {worker.index} (userdefine) holds {taken} tasks of {unit.component!r} "
            f"rather than {n}: an executor's tasks stay together"
        )


def _check_budget(request: SchedulingRequest, worker: WorkerState) -> None:
    cpu, memory = worker.budget_left()
    for left, label, slot, unit in (
        (cpu, "CPU", request.cpu_slot_percent, "% of a core"),
        (memory, "memory", request.memory_slot_mb, " MB"),
    ):
        if left is not None and left < 0:
            budget = left + (worker.cpu if label == "CPU" else worker.memory)
            raise SchedulingError(
                f"user-defined worker {worker.index} reserves {budget} {label} slots "
                f"({budget * slot:g}{unit}) but its tasks ask {budget - left} "
                f"({(budget - left) * slot:g}{unit})"
            )


def _free_index(ledger: Ledger, wanted: int) -> WorkerState | None:
    workers = ledger.workers
    if 0 <= wanted < len(workers) and _unused(workers[wanted]):
        return workers[wanted]
    return next((w for w in workers if _unused(w)), None)


def _unused(worker: WorkerState) -> bool:
    return worker.source == "default" and worker.host is None and not worker.units


def pin_old(request: SchedulingRequest, ledger: Ledger, pool: dict[tuple[int, ...], Unit]) -> None:
    """Keep each previous worker's host and the units whose tasks it held (same components).

    Of a ``task.on.differ.node`` component a worker keeps one task at most (the key may
    have been turned on since); the others are placed again.
    """
    unit_of = {t: u for u in pool.values() for t in u.tasks}
    for old in sorted(request.old_workers, key=lambda o: o.index):
        candidates = {unit_of[t].tasks: unit_of[t] for t in old.tasks if t in unit_of}
        kept, differ = [], set()
        for key, u in sorted(candidates.items()):
            if key not in pool or any(old.tasks.get(t) != u.component for t in key):
                continue
            if u.differ_node:
                if u.component in differ:
                    continue
                differ.add(u.component)
            kept.append(u)
        if not kept:
            continue
        worker = _free_index(ledger, old.index)
        if worker is None:
            return
        worker.source, worker.host = "old", old.host
        for unit in kept:
            del pool[unit.tasks]
            worker.add(unit)
            ledger.note(worker, unit)


def reuse_old_hosts(request: SchedulingRequest, ledger: Ledger) -> None:
    """On a rebalance without the old assignment: the new workers start on the old workers' hosts."""
    for old in sorted(request.old_workers, key=lambda o: o.index):
        worker = _free_index(ledger, old.index)
        if worker is None or old.host is None:
            continue
        worker.source, worker.host = "old", old.host


def check_differ_hosts(request: SchedulingRequest, ledger: Ledger, pool: dict[tuple[int, ...], Unit]) -> None:
    """Refuse when the workers' hosts are too few for what a differ-node component still needs."""
    hosts = {w.host for w in ledger.workers}
    need: dict[str, int] = defaultdict(int)
    for unit in pool.values():
        if unit.differ_node:
            need[unit.component] += 1
    for comp, n in sorted(need.items()):
        free = hosts - ledger.on_hosts[comp]
        if n > len(free):
            raise SchedulingError(
                f"component {comp!r} asks task.on.differ.node for {n} more tasks; topology "
                f"{request.topology!r}'s {len(ledger.workers)} workers are on {len(hosts)} hosts "
                f"({', '.join(sorted(h for h in hosts if h))}), {len(free)} of them without a task of it"
            )


def placing_order(units: list[Unit]) -> list[tuple[str, list[Unit]]]:
    """Components in JStorm's order: differ-node ones, the user's, the system's; each by id."""
    by_comp: dict[str, list[Unit]] = defaultdict(list)
    for unit in sorted(units, key=lambda u: u.tasks):
        by_comp[unit.component].append(unit)

    def rank(item: tuple[str, list[Unit]]) -> tuple[int, str]:
        first = item[1][0]
        return (0 if first.differ_node else 2 if first.system else 1, item[0])

    return sorted(by_comp.items(), key=rank)


def _result(worker: WorkerState) -> WorkerAssignment:
    assert worker.host is not None
    cpu, memory, disk = worker.demand()
    return WorkerAssignment(
        worker.index,
        worker.host,
        tuple(sorted(worker.units, key=lambda u: u.tasks)),
        cpu,
        memory,
        disk,
        worker.source,
    )
