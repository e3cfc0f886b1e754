"""Pluggable strategies: ``squall.scheduler`` names a class by import path; its answer is checked.

A strategy is any class with ``schedule(request: SchedulingRequest) -> Assignment``,
built without arguments (JStorm's ``ITopologyScheduler``). Whatever it answers must
place every unit exactly once, on workers ``0..num_workers-1`` on offered hosts with
free worker slots; otherwise the submit is refused naming the strategy and the fault.
"""

from __future__ import annotations

import importlib
from collections import Counter
from typing import Protocol

from squall.api.errors import InvalidTopologyError
from squall.scheduler import keys as K
from squall.scheduler.model import Assignment, SchedulingError, SchedulingRequest


class Scheduler(Protocol):
    """A scheduling strategy."""

    def schedule(self, request: SchedulingRequest) -> Assignment:
        """The assignment for ``request``; raise ``SchedulingError`` to refuse it."""
        ...


def load_scheduler(conf: dict) -> Scheduler:
    """An instance of the class ``squall.scheduler`` names (``pkg.module.Class`` or ``pkg.module:Class``)."""
    path = K.get(conf, K.SCHEDULER)
    if not isinstance(path, str) or not path.strip():
        raise InvalidTopologyError(f"config {K.SCHEDULER} must be an import path, got {path!r}")
    module, sep, name = path.partition(":") if ":" in path else path.rpartition(".")
    if not sep or not module or not name:
        raise InvalidTopologyError(f"config {K.SCHEDULER}: {path!r} is not module.Class")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise InvalidTopologyError(f"config {K.SCHEDULER}: cannot load {path!r}: {e}") from e
    scheduler = cls()
    if not callable(getattr(scheduler, "schedule", None)):
        raise InvalidTopologyError(f"config {K.SCHEDULER}: {path!r} has no schedule(request) method")
    return scheduler


def check_assignment(request: SchedulingRequest, assignment: Assignment, by: str) -> None:
    """Refuse an assignment that does not place every unit once on offered hosts."""

    def bad(why: str) -> SchedulingError:
        return SchedulingError(f"scheduler {by} gave an invalid assignment for {request.topology!r}: {why}")

    if not isinstance(assignment, Assignment):
        raise bad(f"expected an Assignment, got {type(assignment).__name__}")
    indices = sorted(w.index for w in assignment.workers)
    if indices != list(range(request.num_workers)):
        raise bad(f"workers {indices}, expected 0..{request.num_workers - 1}")
    placed = Counter(u.tasks for w in assignment.workers for u in w.units)
    wanted = Counter(u.tasks for u in request.units)
    if placed != wanted:
        missing = sorted(set(wanted) - set(placed))[:5]
        extra = sorted(k for k, n in placed.items() if n > wanted.get(k, 0))[:5]
        raise bad(f"tasks not placed {missing}, placed more than once or unknown {extra}")
    ports = {o.host: o.ports for o in request.offers}
    used = Counter(w.host for w in assignment.workers)
    for host, n in sorted(used.items()):
        if host not in ports:
            raise bad(f"host {host!r} is not offered")
        if n > ports[host]:
            raise bad(f"{n} workers on {host}, which has {ports[host]} free worker slots")
