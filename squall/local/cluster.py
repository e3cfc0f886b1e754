"""``LocalCluster``: every worker of a topology in this process, one thread each."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from squall.api.errors import (
    AlreadyAliveError,
    InvalidTopologyError,
    TopologyStartError,
)
from squall.api.topology import StormTopology
from squall.runtime.clusters import ClusterBase
from squall.runtime.errors import ErrorLog
from squall.runtime.info import topology_info
from squall.runtime.plan import TaskPlan, make_plan
from squall.runtime.submission import check_name, prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker
from squall.scheduler import build_request

log = logging.getLogger("squall.local")
STOP_TIMEOUT = 30.0


@dataclass
class _Running:
    name: str
    topology: StormTopology
    conf: dict
    plan: TaskPlan
    workers: list[Worker]
    errors: ErrorLog
    status: str = "ACTIVE"
    started_at: float = field(default_factory=time.monotonic)


class LocalCluster(ClusterBase[_Running]):
    """Runs topologies in this process; a context manager that kills them on exit.

    Workers exchange real serialized frames (msgpack, pickle fallback) through bounded
    in-process queues, so serialization faults show up as they would on a cluster.
    """

    def __init__(self, tap: Callable[[str, str, list], None] | None = None) -> None:
        super().__init__()
        self._tap = tap

    def shutdown(self) -> None:
        """Kill every topology still running and wait until all have stopped."""
        for name in list(self._topologies):
            self.kill_topology(name, wait_secs=0)

    # ---- submission ------------------------------------------------------------------

    def submit_topology(self, name: str, conf: dict | None, topology: StormTopology) -> None:
        """Start ``topology`` as ``name``; returns once every task is opened or prepared."""
        check_name(name)
        merged = prepare_conf(conf, topology)
        topology = prepare_topology(topology)
        with self._lock:
            if name in self._topologies:
                raise AlreadyAliveError(f"topology {name!r} is already running; kill it first")
            plan = make_plan(topology, merged)
            # one process on one host: nothing to place, but the placement keys are checked as on Spark
            build_request(name, plan, topology, merged, ())
            running = _Running(name, topology, merged, plan, [], ErrorLog())
            self._start_workers(running, active=not merged.get("squall.topology.start.inactive"))
            self._topologies[name] = running

    def _start_workers(self, running: _Running, active: bool) -> None:
        plan, conf = running.plan, running.conf
        send_buffer = int(conf["topology.executor.send.buffer.size"])
        capacity = max(4, send_buffer // int(conf["squall.transfer.batch.size"]))
        hub = InProcessHub(plan.num_workers, capacity)
        workers = [
            Worker(topology_name=running.name, topology=running.topology, conf=conf, plan=plan,
                   index=i, transport=hub.endpoint(i), errors=running.errors, tap=self._tap,
                   active=active)
            for i in range(plan.num_workers)
        ]
        for w in workers:
            w.start()
        failure = None
        for w in workers:
            w.started.wait()
            failure = failure or w.start_error
        if failure is not None:
            for w in workers:
                w.stop(graceful=True)
            for w in workers:
                w.join(STOP_TIMEOUT)
            if isinstance(failure, (TopologyStartError, InvalidTopologyError)):
                raise failure
            raise TopologyStartError(
                f"topology {running.name!r} failed to start: {type(failure).__name__}: {failure}"
            ) from failure
        running.workers = workers
        running.status = "ACTIVE" if active else "INACTIVE"
        running.started_at = time.monotonic()

    # ---- lifecycle -------------------------------------------------------------------

    def kill_topology(self, name: str, wait_secs: float | None = None) -> None:
        """Deactivate the spouts, wait ``wait_secs`` (default 0), then stop every task."""
        with self._lock:
            running = self._get(name)
            running.status = "KILLED"
            self._stop_workers(running, wait_secs or 0)
            del self._topologies[name]

    def _stop_workers(self, running: _Running, wait_secs: float) -> None:
        for w in running.workers:
            w.set_active(False)
        if wait_secs > 0:
            time.sleep(wait_secs)
        for w in running.workers:
            w.stop(graceful=True)
        for w in running.workers:
            if not w.join(STOP_TIMEOUT):
                log.error("worker %d of %r did not stop within %.0fs", w.index, running.name,
                          STOP_TIMEOUT)

    def activate(self, name: str) -> None:
        """Call the spouts' ``activate`` and resume ``next_tuple``."""
        with self._lock:
            running = self._get(name)
            for w in running.workers:
                w.set_active(True)
            running.status = "ACTIVE"

    def deactivate(self, name: str) -> None:
        """Call the spouts' ``deactivate``; no ``next_tuple`` until activated. Bolts drain."""
        with self._lock:
            running = self._get(name)
            for w in running.workers:
                w.set_active(False)
            running.status = "INACTIVE"

    def rebalance(self, name: str, num_workers: int | None = None,
                  parallelism: dict[str, int] | None = None, wait_secs: float = 0) -> None:
        """Restart ``name`` with a new worker count and/or component parallelism.

        Spouts are deactivated, bolts drain for ``wait_secs``, every task stops, and the
        topology starts again from the submitted components under the new plan. Tuples
        still in flight are failed by timeout at the spout only if the spout survives the
        restart, so use replayable spouts (as with Storm's rebalance).
        """
        with self._lock:
            running = self._get(name)
            topology, conf, plan = self._rebalanced(running, num_workers, parallelism)
            was_active = running.status != "INACTIVE"
            running.status = "REBALANCING"
            self._stop_workers(running, wait_secs)
            running.topology, running.conf, running.plan = topology, conf, plan
            self._start_workers(running, active=was_active)

    # ---- information -----------------------------------------------------------------

    def get_topology_info(self, name: str) -> dict:
        """Status, per-component figures, workers and errors of ``name``."""
        running = self._get(name)
        metrics = [t.metrics for w in running.workers for t in w.tasks.values()]
        return topology_info(name, running.status, running.plan, metrics,
                             running.errors.list(), time.monotonic() - running.started_at)

    def workers(self, name: str) -> list[Worker]:
        """The live workers of ``name`` (for tests and tools)."""
        return list(self._get(name).workers)
