"""``LocalCluster``: every worker of a topology in this process, one thread each."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from squall.api.errors import (
    AlreadyAliveError,
    InvalidTopologyError,
    TopologyStartError,
)
from squall.api.topology import StormTopology
from squall.local import rescale_spout
from squall.local.rescale import new_record, now_ms, rescale_live
from squall.local.rescale_keyed import KeyedRescale, NotSettled, arm, broken, progress
from squall.runtime import clock as runtime_clock
from squall.runtime.autoscale_control import Autoscaler, AutoscaleThread, autoscale_step, make_autoscaler
from squall.runtime.clusters import ClusterBase
from squall.runtime.errors import ErrorLog
from squall.runtime.exactly_once import is_exactly_once
from squall.runtime.info import topology_info
from squall.runtime.live_plan import live_refusal, task_changes
from squall.runtime.plan import TaskPlan, make_plan
from squall.runtime.submission import check_name, prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker
from squall.scheduler import build_request

log = logging.getLogger("squall.local")
START_INACTIVE = "squall.topology.start.inactive"
STOP_TIMEOUT = 30.0


@dataclass
class _Running:
    name: str
    topology: StormTopology
    conf: dict
    plan: TaskPlan
    workers: list[Worker]
    errors: ErrorLog
    hub: InProcessHub | None = None
    status: str = "ACTIVE"
    autoscaler: Autoscaler | None = None
    autoscale_thread: AutoscaleThread | None = None
    started_at: float = field(default_factory=time.monotonic)
    rescale: dict | None = None  # the last rescale's record (API.md, Rescaling)
    # a keyed move riding a checkpoint, or a spout's move, until it is over
    moving: KeyedRescale | rescale_spout.SpoutRescale | None = None


class LocalCluster(ClusterBase[_Running]):
    """Runs topologies in this process; a context manager that kills them on exit.

    Workers exchange real serialized frames (msgpack, pickle fallback) through bounded
    in-process queues, so serialization faults show up as they would on a cluster.
    """

    def __init__(self, tap: Callable[[str, str, list, int], None] | None = None) -> None:
        super().__init__()
        self._tap = tap
        # the clock every worker of this cluster reads: simulated when the cluster is made
        # inside squall.testing.simulated_time()
        self._simulated = runtime_clock.simulated()
        self._clock = runtime_clock.current()

    def shutdown(self) -> None:
        """Kill every topology still running and wait until all have stopped."""
        for name in list(self._topologies):
            self.kill_topology(name, wait_secs=0)

    # ---- submission ------------------------------------------------------------------

    def submit_topology(self, name: str, conf: dict | None, topology: StormTopology, *,
                        inactive: bool = False) -> None:
        """Start ``topology`` as ``name``; returns once every task is opened or prepared.

        ``inactive`` (or ``squall.topology.start.inactive`` in ``conf``): spouts are opened
        but ``next_tuple`` is not called until ``activate`` (Storm's INACTIVE initial status).
        """
        check_name(name)
        if inactive:
            conf = {**(conf or {}), START_INACTIVE: True}
        merged = prepare_conf(conf, topology)
        topology = prepare_topology(topology, merged)
        with self._lock:
            if name in self._topologies:
                raise AlreadyAliveError(f"topology {name!r} is already running; kill it first")
            plan = make_plan(topology, merged)
            # one process on one host: nothing to place, but the placement keys are checked as on Spark
            build_request(name, plan, topology, merged, ())
            running = _Running(name, topology, merged, plan, [], ErrorLog.from_conf(merged))
            self._start_workers(running, active=not merged.get(START_INACTIVE))
            running.autoscaler = make_autoscaler(topology, merged)
            if running.autoscaler is not None:
                running.autoscaler.refusal = lambda counts: self._live_refusal(name, counts)
            self._topologies[name] = running
            if running.autoscaler is not None and self._simulated is None:
                # in simulated time advance_time drives it instead
                running.autoscale_thread = AutoscaleThread(
                    running.autoscaler, name, lambda: self.get_topology_info(name),
                    lambda parallelism: self.rebalance(name, parallelism=parallelism))
                running.autoscale_thread.start()

    def _start_workers(self, running: _Running, active: bool) -> None:
        plan, conf = running.plan, running.conf
        send_buffer = int(conf["topology.executor.send.buffer.size"])
        capacity = max(4, send_buffer // int(conf["squall.transfer.batch.size"]))
        hub = running.hub = InProcessHub(plan.num_workers, capacity)
        workers = [
            Worker(topology_name=running.name, topology=running.topology, conf=conf, plan=plan,
                   index=i, transport=hub.endpoint(i), errors=running.errors, tap=self._tap,
                   active=active, clock=self._clock)
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
            if running.autoscale_thread is not None:
                running.autoscale_thread.stop()
            self._stop_workers(running, wait_secs or 0)
            del self._topologies[name]

    def _stop_workers(self, running: _Running, wait_secs: float) -> None:
        self._set_active(running, False)
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
            self._set_active(running, True)
            running.status = "ACTIVE"

    def deactivate(self, name: str) -> None:
        """Call the spouts' ``deactivate``; no ``next_tuple`` until activated. Bolts drain.

        Returns once every worker has applied it: no ``next_tuple`` call starts after that.
        """
        with self._lock:
            running = self._get(name)
            self._set_active(running, False)
            running.status = "INACTIVE"

    @staticmethod
    def _set_active(running: _Running, active: bool) -> None:
        """Tell every worker, then wait until each applied it (at most one spout call away)."""
        applied = [(w, w.set_active(active)) for w in running.workers]
        for w, done in applied:
            if not done.wait(STOP_TIMEOUT):
                log.error("worker %d of %r did not %s its spouts within %.0fs", w.index,
                          running.name, "activate" if active else "deactivate", STOP_TIMEOUT)

    def rebalance(self, name: str, num_workers: int | None = None,
                  parallelism: dict[str, int] | None = None, wait_secs: float = 0) -> None:
        """Rescale ``name``: live where it can, else a restart under the new plan.

        Live (``runtime.live_plan.live_refusal`` says when not): the rescaled components
        gain tasks with new ids (past the submitted task count, in running workers or in
        new ones when ``num_workers`` grows) or lose their highest ones; the tasks feeding
        them switch routes between two tuples; a removed task runs what it has queued and
        fails what reaches it later, so its spout replays it (at-least-once). No other
        worker or task is restarted. A keyed stateful component's key groups move riding
        the next checkpoint (``local.rescale_keyed``): this returns at once with the record
        ``running``; its last step (retiring removed tasks) runs at the next
        ``get_topology_info``, ``advance_time`` or ``rebalance``. A spout's tasks are all
        replaced by new ones (``local.rescale_spout``): under exactly-once at the next
        checkpoint, from positions its ``merge_positions`` makes; under at-least-once once
        the old tasks drained what they have pending. A restart: spouts are
        deactivated, bolts drain for ``wait_secs``, every task stops, and the topology
        starts again from the submitted components (tuples in flight replay by timeout if
        their spout survives, as with Storm's rebalance).
        ``get_topology_info(name)["rescale"]`` says which, and how it went.
        """
        with self._lock:
            running = self._get(name)
            busy = None
            if running.moving is not None and not self._progress(running):
                # the store is consistent at every point of a move (each key group's state is
                # its last committer's), so a restart may cut in
                busy = (f"a live move of {running.moving.component!r} was still riding checkpoint "
                        f"{running.moving.txid}: restarted instead") if running.moving.txid is not None \
                    else f"a live move of {running.moving.component!r} was still draining: restarted instead"
                running.moving = None
            topology, conf, plan = self._rebalanced(running, num_workers, parallelism)
            counts = {c: len(plan.component_tasks[c]) for c in (parallelism or {})}
            changes = task_changes(running.plan, counts)
            record = running.rescale = new_record(changes)
            reason = busy or live_refusal(topology, conf, running.plan, changes, num_workers, spouts=True)
            was_active = running.status != "INACTIVE"
            running.status = "REBALANCING"
            began = now_ms()
            try:
                keyed = [c for c in changes if topology.components[c].stateful]
                spouts = [c for c in changes if topology.components[c].kind == "spout"]
                if reason is None and (keyed or (spouts and is_exactly_once(conf))) and not was_active:
                    reason = "the topology is inactive: no checkpoint runs to carry the move"
                if reason is None and keyed:
                    # returns at once: the move rides the next checkpoint (record "running")
                    try:
                        running.moving = arm(running, topology, keyed[0], changes, record)
                        running.conf = conf
                        return
                    except NotSettled as e:
                        reason = str(e)
                if reason is None and spouts:
                    # returns at once: the spout's tasks hand over (runtime.live_spout)
                    try:
                        running.moving = rescale_spout.arm(running, topology, spouts[0], changes, record)
                        running.conf = conf
                        return
                    except NotSettled as e:
                        reason = str(e)
                if reason is None:
                    self._rescale_live(running, topology, conf, changes, num_workers, record)
                    return
                record["live"], record["reason"] = False, reason
                self._stop_workers(running, wait_secs)
                running.topology, running.conf, running.plan = topology, conf, plan
                self._start_workers(running, active=was_active)
                record["pause_ms"] = round(now_ms() - began, 3)
                record["status"] = "done"
            except Exception as e:
                record["status"] = "failed"
                record["reason"] = f"{type(e).__name__}: {e}"
                raise
            finally:
                running.status = "ACTIVE" if was_active else "INACTIVE"

    def _rescale_live(self, running: _Running, topology: StormTopology, conf: dict,
                      changes: dict[str, tuple[int, int]], num_workers: int | None,
                      record: dict) -> None:
        def start_worker(index: int, plan: TaskPlan) -> Worker:
            assert running.hub is not None
            w = Worker(topology_name=running.name, topology=topology, conf=conf, plan=plan,
                       index=index, transport=running.hub.endpoint(index), errors=running.errors,
                       tap=self._tap, active=running.workers[0].active, clock=self._clock)
            w.start()
            w.started.wait()
            if w.start_error is not None:
                raise w.start_error
            return w

        rescale_live(running, topology, changes, num_workers, start_worker, record)
        running.conf = conf

    # ---- information -----------------------------------------------------------------

    def _progress(self, running: _Running) -> bool:
        """Finish a keyed move whose tasks are all done; True when none is left running.

        A worker that stopped or was replaced during the move took its tasks' part of it
        along: the topology restarts under the new plan (each key group's committed state
        is its last committer's, and the recovery settles what was staged).
        """
        with self._lock:
            move = running.moving
            spout = isinstance(move, rescale_spout.SpoutRescale)
            if move is not None and (rescale_spout.broken(running, move) if spout else broken(running, move)):  # type: ignore[arg-type]
                running.moving = None
                move.record.update(live=False, reason="a worker stopped during the move: the "
                                   "topology restarted under the new plan")
                was_active = bool(running.workers) and running.workers[0].active
                topology, conf, plan = self._rebalanced(running, None, None)
                self._stop_workers(running, 0)
                running.topology, running.conf, running.plan = topology, conf, plan
                self._start_workers(running, active=was_active)
                move.record["status"] = "done"
            elif isinstance(move, rescale_spout.SpoutRescale):
                if rescale_spout.progress(running, move):
                    running.moving = None
            elif move is not None and progress(running, move):
                running.moving = None
            return running.moving is None

    def get_topology_info(self, name: str) -> dict:
        """Status, per-component figures, workers and errors of ``name``."""
        running = self._get(name)
        self._progress(running)
        metrics = [t.metrics for w in running.workers for t in w.tasks.values()]
        stuck = [dict(s) for w in running.workers for s in list(w.stuck.values())]
        host, pid = socket.gethostname(), os.getpid()
        workers = [{"worker": w.index, "host": host, "pid": pid, "tasks": running.plan.worker_tasks(w.index),
                    "corrupt_frames": w.corrupt_frames, "transfer": w.transfer_stats()}
                   for w in running.workers]
        info = topology_info(name, running.status, running.plan, metrics,
                             running.errors.list(), time.monotonic() - running.started_at,
                             workers=workers, stuck=stuck)
        info["rescale"] = None if running.rescale is None else dict(running.rescale)
        info["autoscale"] = running.autoscaler.record() if running.autoscaler else None
        return info

    def _live_refusal(self, name: str, counts: dict[str, int]) -> str | None:
        """Why ``rebalance(name, parallelism=counts)`` would restart instead of moving live."""
        running = self._get(name)
        return live_refusal(running.topology, running.conf, running.plan,
                            task_changes(running.plan, counts), None, spouts=True)

    def _now(self) -> float:
        return self._simulated.monotonic() if self._simulated is not None else time.monotonic()

    def autoscale(self, name: str) -> dict | None:
        """Let ``name``'s autoscaler look at the figures now; its decision record if it made one.

        The cluster calls it after every step of ``advance_time`` in simulated time, and
        from a thread every second in real time. In ``apply`` mode a decision with changes
        is applied by ``rebalance`` before this returns.
        """
        running = self._get(name)
        scaler = running.autoscaler
        if scaler is None or running.status != "ACTIVE":
            return None
        return autoscale_step(scaler, name, self._now, lambda: self.get_topology_info(name),
                              lambda parallelism: self.rebalance(name, parallelism=parallelism))

    def set_transport_fault(self, name: str, fault: Callable[[int, int, bytes], list[bytes]] | None) -> None:
        """Pass every frame between ``name``'s workers through ``fault`` (None: stop).

        For fault tests: see ``squall.testing.faults`` (drop, duplicate, corrupt frames).
        """
        hub = self._get(name).hub
        assert hub is not None
        hub.fault = fault

    # ---- simulated time and quiet (Storm's testing kit) ---------------------------------

    def advance_time(self, secs: float, increment: float = 1.0, quiet_timeout: float = 10.0) -> None:
        """Move simulated time ``secs`` forward, as Storm's ``advanceClusterTime``.

        Time moves in steps of ``increment`` seconds; after each step every worker runs a
        round at the new time (its due timers fire: message timeouts, ticks, checkpoints,
        metrics windows), then the call waits until the cluster is quiet (nothing queued,
        nothing emitted, nothing in transit) so each step's consequences are complete
        before the next. A topology whose spouts never stop emitting is never quiet: after
        ``quiet_timeout`` real seconds in all, steps only wait for the round at the new time.
        """
        sim = self._simulated
        if sim is None:
            raise RuntimeError("advance_time needs simulated time: create the LocalCluster "
                               "inside squall.testing.simulated_time()")
        if secs < 0 or increment <= 0:
            raise ValueError(f"advance_time({secs}, increment={increment}): time only moves forward")
        deadline = time.monotonic() + quiet_timeout
        left = float(secs)
        while left > 1e-12:
            step = min(increment, left)
            sim.advance(step)
            left -= step
            self._round_everywhere()
            for running in list(self._topologies.values()):
                self._progress(running)
            if time.monotonic() < deadline:
                self.wait_quiet(max(0.0, deadline - time.monotonic()), raise_on_timeout=False)
            for name, running in list(self._topologies.items()):
                if running.autoscaler is not None:
                    self.autoscale(name)

    def _round_everywhere(self) -> None:
        """Return once every live worker of every topology ran a whole round since now."""
        for _ in range(2):  # the first call may land in a round that read the old time
            for running in list(self._topologies.values()):
                for w in running.workers:
                    if not w.stopped.is_set():
                        w.call(lambda: None).wait(STOP_TIMEOUT)

    def wait_quiet(self, timeout: float = 10.0, names: list[str] | None = None,
                   raise_on_timeout: bool = True, trees: bool = False) -> bool:
        """Wait until the topologies (all, or ``names``) are quiet; True if they are.

        Quiet: in two passes over every worker, each answering on its own loop thread
        between rounds, no worker did any work, queued or buffered a tuple (``trees``: nor
        has a spout tree pending), and every spout that may emit was asked in between and
        emitted nothing. The second pass comes after a full round of every worker, so a
        frame in transit between the passes shows up as work. No sleeps.
        """
        deadline = time.monotonic() + timeout
        while True:
            workers = [w for n, r in list(self._topologies.items()) if names is None or n in names
                       for w in r.workers if not w.stopped.is_set()]
            try:
                first = [w.query(w.snapshot, max(0.001, deadline - time.monotonic())) for w in workers]
                second = [w.query(w.snapshot, max(0.001, deadline - time.monotonic())) for w in workers]
            except TimeoutError:
                first, second = [], [(0, False, 0, ())]
            if len(first) == len(second) and all(
                    a[0] == b[0] and b[1] and (not trees or b[2] == 0) and _spouts_asked(a[3], b[3])
                    for a, b in zip(first, second, strict=True)):
                return True
            if time.monotonic() >= deadline:
                if raise_on_timeout:
                    raise TimeoutError(f"the topologies were not quiet within {timeout}s")
                return False

    def workers(self, name: str) -> list[Worker]:
        """The live workers of ``name`` (for tests and tools)."""
        return list(self._get(name).workers)


def _spouts_asked(before: tuple[int, ...], after: tuple[int, ...]) -> bool:
    """Every spout that may emit (not -1) was called between two snapshots."""
    return all(b == -1 or b > a for a, b in zip(before, after, strict=True))
