"""``SparkCluster``: ``LocalCluster``'s methods, with the workers running on Spark.

The topology master of each topology runs in this process, the Spark driver; workers
run as long-lived Spark tasks on the executors of ``squall.spark.master`` (``local[*]``
by default; ``spark://host:port``, ``yarn`` or ``k8s://...`` for a real cluster). Spark
allows one SparkContext per process, so every topology of a ``SparkCluster`` shares
one Spark application.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from squall.api.config import SQUALL_SPARK_MASTER
from squall.api.errors import AlreadyAliveError
from squall.api.topology import StormTopology
from squall.runtime.autoscale_control import AutoscaleThread, make_autoscaler
from squall.runtime.clusters import ClusterBase
from squall.runtime.exactly_once_checks import check_durable_state
from squall.runtime.live_plan import live_refusal, restart_record, task_changes
from squall.runtime.plan import TaskPlan, make_plan
from squall.runtime.submission import check_name, prepare_conf, prepare_topology
from squall.scheduler import Assignment, OldWorker, OtherTopology, old_workers
from squall.scheduler.keys import isolation
from squall.spark import settings as S
from squall.spark.context import DEFAULT_MASTER, cluster_slots, start_spark_context
from squall.spark.environment import PackedEnvironment
from squall.spark.errors import InsufficientSlotsError, SparkSetupError
from squall.spark.live_move import attempt_live, spark_refusal
from squall.spark.master import TopologyMaster
from squall.spark.placement import schedule_on_spark
from squall.spark.settings import setting
from squall.spark.shipping import check_shipped, environment_settings, forget_shipped, ship_user_modules

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger("squall.spark")


class SparkCluster(ClusterBase[TopologyMaster]):
    """Runs topologies on Spark; a context manager that kills them (and its Spark) on exit.

    ``master`` overrides the topologies' ``squall.spark.master``; ``spark_conf`` adds
    ``spark.*`` settings; ``log_dir`` receives Spark's own log (default ``logs/``, or
    ``$SQUALL_LOG_DIR``). ``env`` overrides ``squall.spark.env``: how squall and the
    topology's dependencies reach the executors (``auto``, ``none`` or an archive's
    path; see ``squall.spark.shipping``); ``environment`` is then what was packed. A
    SparkContext already running in this process for the same master is joined rather
    than started, and then left running on exit.
    """

    def __init__(self, master: str | None = None, spark_conf: dict[str, Any] | None = None,
                 log_dir: str | None = None, env: str | None = None) -> None:
        self.master = master
        self.spark_conf = dict(spark_conf or {})
        self.log_dir = log_dir
        self.env = env
        self.environment: PackedEnvironment | None = None
        self._sc: SparkContext | None = None
        self._owns_sc = False
        self._assignments: dict[str, Assignment] = {}  # squall.scheduler's answer per running topology
        self._autoscalers: dict[str, AutoscaleThread] = {}  # per topology with topology.autoscale on
        super().__init__()

    @property
    def spark_context(self) -> SparkContext | None:
        """The SparkContext hosting the workers (None until the first submit)."""
        return self._sc

    def start(self, conf: dict | None = None, topology: StormTopology | None = None) -> SparkContext:
        """Start (or join) the SparkContext now rather than at the first submit.

        ``auto`` packs what ``topology``'s components need with the environment (the
        SparkContext's for every later topology: see ``check_shipped``).
        """
        with self._lock:
            master = self.master or (conf or {}).get(SQUALL_SPARK_MASTER) or DEFAULT_MASTER
            if self._sc is not None:
                if self._sc.master != master:
                    raise SparkSetupError(f"this SparkCluster runs on {self._sc.master}; a topology "
                                          f"cannot ask for {master}")
                return self._sc
            from pyspark import SparkContext

            existed = SparkContext._active_spark_context is not None
            spark_conf = {k: v for k, v in (conf or {}).items() if k.startswith("spark.")}
            spark_conf.update(self.spark_conf)
            squall_conf = {**(conf or {}), **({S.ENV: self.env} if self.env else {})}
            shipped, self.environment = environment_settings(squall_conf, master, spark_conf, topology)
            spark_conf.update(shipped)
            self._sc = start_spark_context(master, spark_conf, self.log_dir)
            self._owns_sc = not existed
            return self._sc

    def shutdown(self) -> None:
        """Kill every topology still running, then stop the SparkContext if it started it."""
        with self._lock:
            for name in list(self._topologies):
                self.kill_topology(name, wait_secs=0)
            if self._sc is not None and self._owns_sc:
                self._sc.stop()
                forget_shipped(self._sc)
            self._sc = None

    # ---- submission ------------------------------------------------------------------

    def submit_topology(self, name: str, conf: dict | None, topology: StormTopology, *,
                        inactive: bool = False) -> None:
        """Start ``topology`` as ``name``; returns once every task is opened or prepared.

        ``inactive`` (or ``squall.topology.start.inactive``): spouts opened, no
        ``next_tuple`` until ``activate``.

        Raises ``InsufficientSlotsError`` when the cluster lacks the task slots for its
        workers, ``SparkSetupError`` when Spark cannot start, ``TopologyStartError`` when
        a component cannot be unpickled, opened or prepared on its executor.
        """
        check_name(name)
        if inactive:
            conf = {**(conf or {}), S.START_INACTIVE: True}
        merged = prepare_conf(conf, topology)
        S.check_heartbeats(merged)
        check_durable_state(merged, "SparkCluster")
        topology = prepare_topology(topology, merged)
        with self._lock:
            if name in self._topologies:
                raise AlreadyAliveError(f"topology {name!r} is already running; kill it first")
            sc = self.start(merged, topology)
            check_shipped(self.environment, merged, topology)
            merged[SQUALL_SPARK_MASTER] = sc.master
            plan = make_plan(topology, merged)
            slots = self._check_slots(sc, name, plan.num_workers, merged)
            plan, assignment = self._schedule(sc, name, topology, merged, plan, slots)
            ship_user_modules(sc)
            master = TopologyMaster(name, topology, merged, plan, sc,
                                    active=not setting(merged, S.START_INACTIVE))
            master.placement_notes = list(assignment.notes)
            master.start()
            self._topologies[name] = master
            self._assignments[name] = assignment
            scaler = make_autoscaler(topology, merged)
            if scaler is not None:
                scaler.refusal = lambda counts: self._live_refusal(name, counts)
                thread = self._autoscalers[name] = AutoscaleThread(
                    scaler, name, lambda: self.get_topology_info(name),
                    lambda parallelism: self.rebalance(name, parallelism=parallelism))
                thread.start()

    def _live_refusal(self, name: str, counts: dict[str, int]) -> str | None:
        """Why ``rebalance(name, parallelism=counts)`` would restart instead of moving live."""
        master = self._get(name)
        changes = task_changes(master.plan, counts)
        return (live_refusal(master.topology, master.conf, master.plan, changes, None, spouts=True)
                or spark_refusal(master, master.topology, changes, None))

    def _schedule(self, sc: SparkContext, name: str, topology: StormTopology, conf: dict, plan: TaskPlan,
                  slots: int, previous: TopologyMaster | None = None) -> tuple[TaskPlan, Assignment]:
        """Place ``plan`` on the executors' hosts (squall.scheduler), around the other topologies."""
        taken = [a for n, a in self._assignments.items() if n != name]
        others = [OtherTopology(n, frozenset(a.hosts()), isolation(self._topologies[n].conf), len(a.workers))
                  for n, a in self._assignments.items() if n != name and n in self._topologies]
        old: tuple[OldWorker, ...] = ()
        traffic = None
        if previous is not None:  # a rebalance: where each worker actually runs, and what flowed
            info = previous.info()
            hosts = [w.get("host") or w.get("assigned_host") for w in info["workers"]]
            old = old_workers(previous.plan, hosts)
            traffic = {c: float(v.get("transferred") or 0) for c, v in info["components"].items()}
        return schedule_on_spark(sc, name, topology, conf, plan, expected_slots=slots,
                                 wait_secs=float(setting(conf, S.EXECUTOR_WAIT)), taken=taken,
                                 previous=old, rebalance=previous is not None, traffic=traffic,
                                 others=others)

    def _check_slots(self, sc: SparkContext, name: str, workers: int, conf: dict,
                     exclude: str | None = None) -> int:
        slots = cluster_slots(sc, str(sc.master), float(setting(conf, S.EXECUTOR_WAIT)),
                              setting(conf, S.MASTER_UI_URL))
        used = sum(m.plan.num_workers for n, m in self._topologies.items() if n != exclude)
        if workers + used > slots:
            taken = f", {used} of them taken by running topologies" if used else ""
            raise InsufficientSlotsError(
                f"topology {name!r} asks for {workers} workers but the Spark cluster ({sc.master}) "
                f"has {slots} task slots{taken}; each worker holds one slot for its lifetime: "
                f"lower topology.workers or give the cluster more cores"
            )
        return slots

    # ---- lifecycle -------------------------------------------------------------------

    def kill_topology(self, name: str, wait_secs: float | None = None) -> None:
        """Deactivate the spouts, wait ``wait_secs`` (default: the message timeout), stop it."""
        with self._lock:
            master = self._get(name)
            if wait_secs is None:
                wait_secs = float(master.conf.get("topology.message.timeout.secs") or 30)
            master.status = "KILLED"
            scaler = self._autoscalers.pop(name, None)
            if scaler is not None:
                scaler.stop()
            master.stop(wait_secs=wait_secs)
            del self._topologies[name]
            self._assignments.pop(name, None)

    def activate(self, name: str) -> None:
        """Call the spouts' ``activate`` and resume ``next_tuple``."""
        with self._lock:
            self._get(name).set_active(True)

    def deactivate(self, name: str) -> None:
        """Call the spouts' ``deactivate``; no ``next_tuple`` until activated. Bolts drain."""
        with self._lock:
            self._get(name).set_active(False)

    def rebalance(self, name: str, num_workers: int | None = None,
                  parallelism: dict[str, int] | None = None, wait_secs: float = 0) -> None:
        """Rescale ``name``: live where it can, else a restart under the new plan.

        Live (``runtime.live_plan.live_refusal`` and ``spark.live_move.spark_refusal`` say
        when not): as on ``LocalCluster``, a stateless bolt gains tasks with new ids in the
        running workers or loses its highest ones, the tasks feeding it switch routes
        between two tuples, a removed task runs what it has queued and fails what reaches
        it later; no worker process restarts (``spark.live_move``). A keyed stateful bolt's
        key groups move riding one checkpoint, and this waits for the move (the record says
        ``running`` until then; ``StepError`` if its checkpoint rolled back: the old routing
        stays). A restart: spouts are
        deactivated, bolts drain for ``wait_secs``, every worker stops and the topology
        starts again under the new plan. ``get_topology_info(name)["rescale"]`` says which.
        """
        with self._lock:
            old = self._get(name)
            before = old.plan  # a live move that fell back changed the master's plan already
            topology, conf, plan = self._rebalanced(old, num_workers, parallelism)
            counts = {c: len(plan.component_tasks[c]) for c in (parallelism or {})}
            changes = task_changes(old.plan, counts)
            reason = (live_refusal(topology, conf, old.plan, changes, num_workers, spouts=True)
                      or spark_refusal(old, topology, changes, num_workers))
            if reason is None:
                reason = attempt_live(old, topology, conf, parallelism or {}, changes)
                if reason is None:
                    return
            assert self._sc is not None
            slots = self._check_slots(self._sc, name, plan.num_workers, conf, exclude=name)
            plan, assignment = self._schedule(self._sc, name, topology, conf, plan, slots, previous=old)
            was_active = old.status != "INACTIVE"
            old.status = "REBALANCING"
            record = old.rescale = restart_record(before, plan, reason)
            began = time.perf_counter()
            old.stop(wait_secs=wait_secs)
            # the old master answers get_topology_info (as REBALANCING) until the new one runs
            master = TopologyMaster(name, topology, conf, plan, self._sc, active=was_active)
            master.placement_notes = list(assignment.notes)
            master.rescale = record
            try:
                master.start()
            except Exception as e:
                record.update(status="failed", reason=f"{type(e).__name__}: {e}")
                del self._topologies[name]
                self._assignments.pop(name, None)
                raise
            record.update(status="done", pause_ms=round((time.perf_counter() - began) * 1000.0, 3))
            self._topologies[name] = master
            self._assignments[name] = assignment

    # ---- information -----------------------------------------------------------------

    def get_topology_info(self, name: str) -> dict:
        """Status, per-component figures, workers (host, pid, restarts) and errors of ``name``."""
        info = self._get(name).info()
        thread = self._autoscalers.get(name)
        info["autoscale"] = thread.scaler.record() if thread is not None else None
        return info
