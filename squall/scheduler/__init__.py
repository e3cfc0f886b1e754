"""JStorm's scheduler as pure code: resource slots, user-defined > old > balanced assignment.

No Spark, no sockets, no clock: a ``SchedulingRequest`` (the topology's units, the
cluster's offers, the previous assignment, the configuration) in, an ``Assignment`` or
a ``SchedulingError`` out. The Spark layer feeds it the executors Spark gives the
application and pins each worker to its host. See docs/scheduler.md.
"""

from squall.scheduler.default import DefaultScheduler
from squall.scheduler.model import (
    Assignment,
    HostOffer,
    OldWorker,
    OtherTopology,
    SchedulingError,
    SchedulingRequest,
    Unit,
    UserWorker,
    WorkerAssignment,
)
from squall.scheduler.offers import offers_from_executors
from squall.scheduler.planning import apply_assignment, schedule, schedule_plan
from squall.scheduler.request import build_request, old_workers
from squall.scheduler.strategy import Scheduler, load_scheduler

__all__ = [
    "Assignment",
    "DefaultScheduler",
    "HostOffer",
    "OldWorker",
    "OtherTopology",
    "Scheduler",
    "SchedulingError",
    "SchedulingRequest",
    "Unit",
    "UserWorker",
    "WorkerAssignment",
    "apply_assignment",
    "build_request",
    "load_scheduler",
    "offers_from_executors",
    "old_workers",
    "schedule",
    "schedule_plan",
]
