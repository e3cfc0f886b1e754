"""Scheduling a task plan: request in, the configured strategy, the plan re-dealt by its answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from squall.api.topology import StormTopology
from squall.runtime.plan import SYSTEM, Executor, TaskPlan
from squall.scheduler import keys as K
from squall.scheduler.model import Assignment, HostOffer, OldWorker, OtherTopology, SchedulingRequest
from squall.scheduler.request import build_request
from squall.scheduler.strategy import check_assignment, load_scheduler


def schedule(request: SchedulingRequest, conf: dict) -> Assignment:
    """Run the strategy ``squall.scheduler`` names on ``request``, and check its answer."""
    scheduler = load_scheduler(conf)
    assignment = scheduler.schedule(request)
    check_assignment(request, assignment, str(K.get(conf, K.SCHEDULER)))
    return assignment


def apply_assignment(
    plan: TaskPlan, assignment: Assignment, cpu_slot_percent: float = 10.0, memory_slot_mb: float = 128.0
) -> TaskPlan:
    """``plan`` with its executors on the workers and hosts ``assignment`` gives.

    Task ids, executors and the one ``__system`` task per worker stay as planned.
    """
    system = {w: ex for w, exs in enumerate(plan.worker_executors) for ex in exs if ex.component == SYSTEM}
    executor = {ex.tasks: ex for ex in plan.executors}
    workers = sorted(assignment.workers, key=lambda w: w.index)
    worker_executors: list[list[Executor]] = [
        [executor[u.tasks] for u in w.units] + [system[w.index]] for w in workers
    ]
    resources = [
        {
            "cpu_slots": w.cpu,
            "memory_slots": w.memory,
            "disk_slots": w.disk,
            "cpu_percent": round(w.cpu * cpu_slot_percent, 3),
            "memory_mb": round(w.memory * memory_slot_mb, 3),
            "placed_by": w.source,
        }
        for w in workers
    ]
    return replace(
        plan,
        worker_executors=worker_executors,
        worker_hosts=[w.host for w in workers],
        worker_resources=resources,
    )


def schedule_plan(
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
) -> tuple[TaskPlan, Assignment]:
    """Schedule topology ``name``'s ``plan`` onto ``offers``; the placed plan and the assignment.

    Raises ``SchedulingError`` (an ``InvalidTopologyError``) when the cluster cannot hold it.
    """
    request = build_request(
        name, plan, topology, conf, offers, previous=previous, rebalance=rebalance, traffic=traffic,
        others=others,
    )
    assignment = schedule(request, conf)
    return apply_assignment(plan, assignment, request.cpu_slot_percent, request.memory_slot_mb), assignment
