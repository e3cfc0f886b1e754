"""What every cluster shares: its running topologies by name, and the context manager."""

from __future__ import annotations

import threading
import time
from typing import Any, Generic, Protocol, TypeVar

from squall.api.errors import NotAliveError
from squall.api.topology import StormTopology
from squall.runtime.exactly_once_checks import check_spout_rescale
from squall.runtime.plan import TaskPlan, make_plan
from squall.runtime.submission import prepare_conf, with_parallelism


class RunningTopology(Protocol):
    """What a cluster keeps per running topology."""

    name: str
    status: str
    topology: StormTopology
    conf: dict
    plan: TaskPlan
    started_at: float


T = TypeVar("T", bound=RunningTopology)


class ClusterBase(Generic[T]):
    """Running topologies by name, a lock for lifecycle calls, and ``with`` support.

    Subclasses implement ``shutdown`` (kill what runs and wait), called on leaving ``with``.
    """

    def __init__(self) -> None:
        self._topologies: dict[str, T] = {}
        self._lock = threading.RLock()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        """Kill every topology still running and wait until all have stopped."""
        raise NotImplementedError

    def _get(self, name: str) -> T:
        running = self._topologies.get(name)
        if running is None:
            raise NotAliveError(f"no topology named {name!r} is running")
        return running

    @staticmethod
    def _rebalanced(running: T, num_workers: int | None,
                    parallelism: dict[str, int] | None) -> tuple[StormTopology, dict, TaskPlan]:
        """The topology, configuration and plan ``running`` gets from a rebalance (validated)."""
        topology = with_parallelism(running.topology, parallelism or {})
        check_spout_rescale(running.conf, running.topology, topology)
        conf = dict(running.conf)
        if num_workers is not None:
            conf["topology.workers"] = num_workers
        conf = prepare_conf(conf, topology)
        return topology, conf, make_plan(topology, conf)

    def list_topologies(self) -> list[dict]:
        """A summary of each running topology."""
        now = time.monotonic()
        return [
            {"name": r.name, "status": r.status, "workers": r.plan.num_workers,
             "tasks": sum(len(ts) for ts in r.plan.component_tasks.values()),
             "uptime_secs": round(now - r.started_at, 3)}
            for r in self._topologies.values()
        ]
