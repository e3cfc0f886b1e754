"""A topology master as a Spark application of its own: the driver Nimbus spark-submits.

``python -m squall.spark.app --store URI --blobs DIR --name NAME --epoch N`` (Nimbus runs
it through ``spark-submit``) reads topology ``NAME``'s record from the store, loads its
code version(s) from the blob store, starts a SparkContext on the record's Spark master,
runs a ``TopologyMaster`` for it, and serves the control endpoint (``control``) through
which Nimbus activates, deactivates, rebalances, upgrades and kills it.

It registers in the store under ``masters/NAME`` (control URL, pid, state) and heartbeats
there every second with a summary of its figures; with each heartbeat it also stores its
tasks' heartbeats and start times, their errors and the assignment (JStorm's records,
``squall.store.taskrecords``), and a relaunched master carries on from them.

It runs for as long as the record's ``epoch`` is its own: when Nimbus relaunches the
topology (a new epoch) or removes the record (a kill), this master stops its workers and
exits, so two masters never drive the same topology for long. Nimbus itself may die and
come back meanwhile: nothing here depends on it being up.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import secrets
import socket
import sys
import threading
import time
from typing import Any

import cloudpickle

from squall.api.config import SQUALL_SPARK_MASTER
from squall.api.topology import StormTopology
from squall.runtime import clock
from squall.runtime.autoscale_control import AutoscaleThread, make_autoscaler
from squall.runtime.errors import without_texts
from squall.runtime.layout import layout_difference, upgrade_refusal
from squall.runtime.live_plan import live_refusal, restart_record, task_changes
from squall.runtime.plan import TaskPlan, make_plan
from squall.runtime.submission import prepare_conf, prepare_topology, with_parallelism
from squall.scheduler import OldWorker, OtherTopology, SchedulingError, old_workers
from squall.scheduler import keys as SK
from squall.spark import settings as S
from squall.spark.context import cluster_slots, start_spark_context
from squall.spark.control import ControlError, ControlServer
from squall.spark.errors import InsufficientSlotsError
from squall.spark.live_move import StepError, attempt_live, spark_refusal
from squall.spark.master import TopologyMaster
from squall.spark.placement import (
    check_reserved,
    old_from_record,
    other_topologies,
    placement_record,
    schedule_on_spark,
    whole_cluster_slots,
)
from squall.spark.settings import setting
from squall.spark.shipping import environment_settings
from squall.spark.transport import bind_address
from squall.spark.worker_main import WorkerCode, use_code
from squall.state.codec import STATE_KEY
from squall.store import BlobStore, Store, StoreError, open_store
from squall.store import keys as K
from squall.store import taskrecords as R

log = logging.getLogger("squall.spark.app")
HEARTBEAT_SECS = 1.0
# each task's heartbeat record (``taskbeats/NAME``, 12,000 entries at 1,000 workers): Nimbus
# reads it only while no master answers, so every few beats is enough (docs/scale.md)
TASK_RECORDS_SECS = 5.0


class Fenced(Exception):
    """A newer master of this topology exists, or the topology was killed."""


class TopologyApp:
    """Runs topology ``name`` for launch ``epoch`` (see the module docstring)."""

    def __init__(self, store: Store, blobs: BlobStore, name: str, epoch: int,
                 log_dir: str | None = None) -> None:
        self.store = store
        self.blobs = blobs
        self.name = name
        self.epoch = epoch
        self.log_dir = log_dir
        self.master: TopologyMaster | None = None
        self.sc: Any = None
        self.record: dict = {}
        self._codes: dict[tuple, WorkerCode] = {}
        self._lock = threading.RLock()  # one control operation at a time
        self._exit = threading.Event()
        self._beats = 0
        self.beat_failures = 0  # store heartbeats lost to an unexpected error (info, /metrics)
        self._records_at = float("-inf")  # when the task records were last written (runtime clock)
        self._fenced = False
        self.state = K.STARTING
        self.error: str | None = None
        self.control: ControlServer | None = None
        self.control_url: str | None = None
        self.autoscaler: AutoscaleThread | None = None  # topology.autoscale on
        # where the previous launch's workers ran (the stored assignment), for squall.use.old.assignment
        self._previous: tuple[OldWorker, ...] = ()
        self._stored_errors: list[dict] = []  # what taskerrors/<name> holds, so unchanged is not rewritten
        self._stored_placement: list[dict] | None = None

    # ---- loading ---------------------------------------------------------------------

    def load_version(self, version: int) -> WorkerCode:
        """The code, prepared topology and configuration of ``version`` (cached).

        The record's worker count and parallelism (set by rebalances) apply to every version.
        """
        rec = self.record
        cache_key = (version, rec.get("workers"), tuple(sorted((rec.get("parallelism") or {}).items())))
        if cache_key in self._codes:
            return self._codes[cache_key]
        blobs = self.blobs.version(rec["id"], version)
        use_code(blobs.code_path)  # the driver unpickles custom groupings of the user's modules
        topology = cloudpickle.loads(blobs.topology_bytes())
        topology = with_parallelism(topology, rec.get("parallelism") or {})
        conf = blobs.conf()
        if rec.get("workers"):
            conf["topology.workers"] = rec["workers"]
        conf[SQUALL_SPARK_MASTER] = rec["spark_master"]
        if not conf.get(STATE_KEY):
            conf[STATE_KEY] = self.state_key()
        conf = prepare_conf(conf, topology)
        S.check_heartbeats(conf)
        code = WorkerCode(version, prepare_topology(topology, conf), conf, blobs.code_path)
        self._codes[cache_key] = code
        return code

    def state_key(self) -> str:
        """The topology name's state key, so that pickled state values carry its tag.

        Made once and kept in the store across kills and resubmits (its state outlives them).
        """
        key = K.state_key_key(self.name)
        self.store.create(key, {"key": secrets.token_hex(32)})
        value = (self.store.get(key) or {}).get("key")
        if not isinstance(value, str) or len(value) != 64:
            raise RuntimeError(f"topology {self.name!r}: the store's state key {key} is malformed")
        return value

    def _check_slots(self, plan: TaskPlan, conf: dict) -> int:
        slots = cluster_slots(self.sc, str(self.sc.master), float(setting(conf, S.EXECUTOR_WAIT)),
                              setting(conf, S.MASTER_UI_URL))
        if plan.num_workers > slots:
            raise InsufficientSlotsError(
                f"topology {self.name!r} asks for {plan.num_workers} workers but its Spark "
                f"application ({self.sc.master}) has {slots} task slots; each worker holds one "
                f"slot: lower the worker count or give the application more cores")
        reserved = int(SK.number(conf, SK.RESERVED_WORKERS, integer=True))
        if reserved:  # the slots the other topologies' applications hold on the cluster count too
            check_reserved(self.name, str(self.sc.master), plan.num_workers,
                           whole_cluster_slots(self.sc, conf), self._others(), reserved)
        return slots

    def _others(self) -> list[OtherTopology]:
        """The other topologies on this topology's Spark cluster, as the store has them."""
        return other_topologies(self.store, self.blobs, self.name, str(self.record.get("spark_master")))

    def _schedule(self, topology: StormTopology, conf: dict, plan: TaskPlan, slots: int,
                  previous: TopologyMaster | None = None) -> tuple[TaskPlan, list[str]]:
        """Place ``plan`` on the application's executors (squall.scheduler); the plan and its notes."""
        old, traffic = self._previous, None
        if previous is not None:  # a rebalance: where each worker actually runs, and what flowed
            info = previous.info()
            hosts = [w.get("host") or w.get("assigned_host") for w in info["workers"]]
            old = old_workers(previous.plan, hosts)
            traffic = {c: float(v.get("transferred") or 0) for c, v in info["components"].items()}
        others = self._others()  # for isolated hosts, as SparkCluster's taken
        placed, assignment = schedule_on_spark(
            self.sc, self.name, topology, conf, plan, expected_slots=slots,
            wait_secs=float(setting(conf, S.EXECUTOR_WAIT)), previous=old, rebalance=previous is not None,
            traffic=traffic, others=others)
        return placed, list(assignment.notes)

    # ---- the run ---------------------------------------------------------------------

    def run(self) -> int:
        """Start the topology and heartbeat until killed or fenced; the exit status."""
        rec = self.store.get(K.topology_key(self.name))
        if rec is None or rec.get("epoch") != self.epoch:
            log.error("topology %r has no record for epoch %d: not starting", self.name, self.epoch)
            return 3
        try:
            self.record = K.check_record(self.name, rec)
        except K.RecordError as e:
            log.error("%s: not starting", e)
            return 3
        last = self.store.get(K.master_key(self.name))
        assigned = self.store.get(K.assignment_key(self.name))
        if assigned is not None and assigned.get("epoch") != self.epoch:
            self._previous = old_from_record(assigned.get("workers"))
        elif last is not None and last.get("epoch") != self.epoch:
            self._previous = old_from_record(last.get("placement"))
        self.control = self._control_server(rec)
        self.control_url = self.control.start()
        # heartbeats start now, not once the workers run: starting Spark takes seconds
        beater = threading.Thread(target=self._heartbeat_until_exit, name="squall-app-heartbeat",
                                  daemon=True)
        beater.start()
        try:
            self._start(rec)
        except Exception as e:  # noqa: BLE001 - every start failure is reported to Nimbus
            log.exception("topology %r failed to start", self.name)
            self.error = _one_line(e)
            self.state = K.FAILED
            self._exit.set()
            beater.join()
            self._beat_now()
            return self._shutdown(1)
        self.state = K.RUNNING
        self._beat_now()
        log.info("topology %r (epoch %d) running; control endpoint %s", self.name, self.epoch,
                 self.control_url)
        self._exit.wait()
        beater.join()
        if self._fenced:
            log.warning("topology %r: epoch %d is no longer current (relaunched or killed); "
                        "stopping its workers", self.name, self.epoch)
            with self._lock:
                if self.master is not None:
                    self.master.stop(wait_secs=0)
            return self._shutdown(3)
        self._beat_now()  # STOPPED, after a kill
        return self._shutdown(0)

    def _control_server(self, rec: dict) -> ControlServer:
        """The control endpoint, on the master's bind host and ``squall.spark.master.control.port``."""
        try:
            conf = self.blobs.version(rec["id"], rec["version"]).conf()
        except (OSError, ValueError):
            conf = {}  # the start reports the missing version; the endpoint says so to Nimbus
        bind, advertised = bind_address(str(rec.get("bind_host") or setting(conf, S.MASTER_BIND_HOST)))
        return ControlServer("0.0.0.0" if bind == "*" else bind, rec["secret"], self._routes(),
                             port=setting(conf, S.MASTER_CONTROL_PORT), advertised=advertised)

    def _start(self, rec: dict) -> None:
        base = self.load_version(rec["version"])
        spark_conf = {k: v for k, v in base.conf.items() if k.startswith("spark.")}
        spark_conf.setdefault("spark.app.name", f"squall-{self.name}")
        spark_conf.update(environment_settings(base.conf, rec["spark_master"], spark_conf, base.topology)[0])
        self.sc = start_spark_context(rec["spark_master"], spark_conf, self.log_dir)
        plan = make_plan(base.topology, base.conf)
        plan, notes = self._schedule(base.topology, base.conf, plan, self._check_slots(plan, base.conf))
        master = TopologyMaster(self.name, base.topology, base.conf, plan, self.sc,
                                active=bool(rec.get("active", True)), code_path=base.code_path,
                                version=base.version, secret=bytes.fromhex(rec["secret"]))
        master.placement_notes = notes
        self._restore_records(master)
        upgrade = rec.get("upgrade") or {}
        if upgrade.get("workers"):  # a relaunch in the middle of a gray upgrade
            new = self.load_version(upgrade["to"])
            for index in upgrade["workers"]:
                master.worker_code[index] = new
        self.master = master
        master.start()
        scaler = make_autoscaler(base.topology, base.conf)
        if scaler is not None:
            scaler.refusal = self._live_refusal
            self.autoscaler = AutoscaleThread(
                scaler, self.name, lambda: self.info({}),
                lambda parallelism: self.rebalance({"parallelism": parallelism}))
            self.autoscaler.start()
        debug = rec.get("debug") or {}
        if debug.get("rate"):  # tuple sampling outlives a relaunch of the master
            master.set_debug(float(debug["rate"]), debug.get("components"))

    def _restore_records(self, master: TopologyMaster) -> None:
        """Carry on from the errors and task heartbeats a previous master stored."""
        try:
            errors = R.errors_from(self.store.get(K.task_errors_key(self.name)))
            tasks = R.tasks_from(R.read_beats(self.store, self.name), time.time())
        except StoreError as e:
            log.warning("topology %r: the stored task records cannot be read: %s", self.name, e)
            return
        master.errors.extend(errors)
        master.liveness.restore(tasks)
        self._stored_errors = list(errors)

    def _store_records(self, info: dict, placement: list[dict]) -> None:
        """Write JStorm's records (task heartbeats, errors, assignment) if this epoch is current."""
        now = time.time()
        if info.get("tasks") is not None:  # every TASK_RECORDS_SECS only
            parts = R.beats_records(self.epoch, info["tasks"], now)
            for i in range(len(parts) - 1, -1, -1):  # the first, which counts the parts, last
                key = K.taskbeats_part_key(self.name, i) if i else K.taskbeats_key(self.name)
                self._write_current(key, parts[i])
        if info["errors"] != self._stored_errors:
            self._write_current(K.task_errors_key(self.name), R.errors_record(self.epoch, info["errors"]))
            self._stored_errors = list(info["errors"])
        if placement != self._stored_placement:
            self._write_current(K.assignment_key(self.name), R.assignment_record(self.epoch, placement, now))
            self._stored_placement = placement

    def _write_current(self, key: str, value: dict) -> None:
        def write(old: dict | None) -> dict:
            if old is not None and old.get("epoch", 0) > self.epoch:
                raise Fenced()
            return value
        self.store.update(key, write)

    def _heartbeat_until_exit(self) -> None:
        """The heartbeat thread: beat every second; end the run if this epoch is fenced."""
        while not self._exit.wait(HEARTBEAT_SECS):
            try:
                rec = self.store.get(K.topology_key(self.name))
                if rec is None or rec.get("epoch") != self.epoch:
                    raise Fenced()
                self._beat_now()
            except Fenced:
                self._fenced = True
                self._exit.set()
            except StoreError as e:
                # the workers carry on without the store; Nimbus may relaunch us if it lasts
                log.warning("topology %r: heartbeat not stored: %s", self.name, e)
            except Exception:  # noqa: BLE001 - a dead beat thread would make Nimbus take us for dead
                self.beat_failures += 1
                log.exception("topology %r: heartbeat failed unexpectedly (%d so far); beating on",
                              self.name, self.beat_failures)

    def _beat_now(self) -> None:
        try:
            self._beat(self.state, control=self.control_url, error=self.error)
        except Fenced:
            self._fenced = True
            self._exit.set()
        except StoreError as e:
            log.warning("topology %r: heartbeat not stored: %s", self.name, e)

    def _shutdown(self, code: int) -> int:
        if self.control is not None:
            self.control.stop()
        if self.sc is not None:
            self.sc.stop()
        return code

    def _beat(self, state: str, **extra: Any) -> None:
        self._beats += 1
        entry = {"epoch": self.epoch, "state": state, "pid": os.getpid(), "host": socket.gethostname(),
                 "beat": self._beats, "time": time.time(), **extra}
        if self.sc is not None:
            entry["app_id"] = self.sc.applicationId
        records = None
        if self.master is not None and state == K.RUNNING and not self._exit.is_set():
            now = clock.monotonic()
            tasks = now - self._records_at >= TASK_RECORDS_SECS
            if tasks:
                self._records_at = now
            # counters only: the whole info is for Nimbus's pages; each task's report every few beats
            info = self.master.beat_info(tasks=tasks)
            entry["summary"] = self._summary(info)
            # the placement goes to ``assignments/NAME`` when it changes, not into every beat:
            # at 1,000 workers it is 230 KB (masters of older squall wrote it here: still read)
            entry["versions"] = {str(k): v for k, v in self.master.worker_versions().items()}
            records = (info, placement_record(self.master.plan, info["workers"]))

        def write(old: dict | None) -> dict:
            if old is not None and old.get("epoch", 0) > self.epoch:
                raise Fenced()
            return entry
        self.store.update(K.master_key(self.name), write)
        if records is not None:
            self._store_records(*records)

    def _summary(self, info: dict) -> dict:
        assert self.master is not None
        spouts = {c.id for c in self.master.topology.spouts}
        comps = info["components"]
        return {
            "status": info["status"], "workers": info["num_workers"],
            "tasks": sum(len(c["tasks"]) for c in comps.values()),
            "emitted": sum(c["emitted"] for c in comps.values()),
            "acked": sum(c["acked"] for cid, c in comps.items() if cid in spouts),
            "failed": sum(c["failed"] for cid, c in comps.items() if cid in spouts),
            "errors": len(info["errors"]), "uptime_secs": info["uptime_secs"],
        }

    # ---- control operations (control endpoint threads) -------------------------------

    def _routes(self) -> dict:
        return {
            ("GET", "/info"): self.info,
            ("GET", "/info/brief"): self.brief_info,
            ("GET", "/info/components"): self.components_info,
            ("POST", "/activate"): lambda body: self._set_active(True),
            ("POST", "/deactivate"): lambda body: self._set_active(False),
            ("POST", "/rebalance"): self.rebalance,
            ("POST", "/upgrade"): self.upgrade,
            ("POST", "/kill"): self.kill,
            ("POST", "/debug"): self.debug,
            ("POST", "/samples"): self.samples,
        }

    def _running(self) -> TopologyMaster:
        if self.master is None:
            raise ControlError(409, f"topology {self.name!r} is still starting")
        return self.master

    def _live_refusal(self, counts: dict[str, int]) -> str | None:
        """Why a rebalance to ``counts`` would restart the workers instead of moving live."""
        master = self._running()
        changes = task_changes(master.plan, counts)
        return (live_refusal(master.topology, master.conf, master.plan, changes, None, spouts=True)
                or spark_refusal(master, master.topology, changes, None))

    def info(self, _body: dict, per_task: bool = True) -> dict:
        """``get_topology_info`` plus each worker's version and this master's epoch."""
        info = self._running().info(per_task=per_task)
        info["autoscale"] = self.autoscaler.scaler.record() if self.autoscaler is not None else None
        info.update(epoch=self.epoch, pid=os.getpid(), spark_master=self.record.get("spark_master"),
                    app_id=self.sc.applicationId if self.sc is not None else None,
                    store_beat_failures=self.beat_failures)
        return info

    def components_info(self, body: dict) -> dict:
        """``info`` without per-task detail (``by_task``, ``tasks``), for the topology page.

        At 1,000 workers the whole info is 10 MB, nearly all of it per task: the topology
        page shows components and workers, and the component page asks for the whole.
        """
        return self.info(body, per_task=False)

    def brief_info(self, body: dict) -> dict:
        """``info`` with its errors' texts left out, for Nimbus's counts.

        ``/metrics`` and the summaries need none, and the texts are most of an info's bytes.
        """
        info = self.info(body)
        return {**info, "errors": without_texts(info["errors"])}

    def debug(self, body: dict) -> dict:
        """Sample emitted tuples at ``rate`` (0: off), of ``components`` only when given."""
        rate = float(body.get("rate") or 0.0)
        components = body.get("components") or None
        with self._lock:
            self._running().set_debug(rate, components)
        return {"rate": rate, "components": components}

    def samples(self, body: dict) -> dict:
        """The sampled tuples kept, numbered above ``since``."""
        master = self._running()
        return {"debug": master.debug, "samples": master.recent_samples(int(body.get("since") or 0))}

    def _set_active(self, active: bool) -> dict:
        with self._lock:
            self._running().set_active(active)
        return {"active": active}

    def rebalance(self, body: dict) -> dict:
        """Rescale live where it can, else restart every worker under the new plan (state kept).

        Live: a stateless bolt's tasks change in the running workers, a keyed stateful
        bolt's key groups move riding one checkpoint (``spark.live_move``; waited for).
        """
        with self._lock:
            old = self._running()
            if old.worker_code and not body.get("drop_upgrade"):
                # an expired upgrade is dropped: the new master runs every worker on the base
                raise ControlError(409, "a gray upgrade is in progress: complete or roll it back first")
            parallelism = body.get("parallelism") or {}
            before = old.plan  # a live move that fell back changed the master's plan already
            topology = with_parallelism(old.topology, parallelism)
            conf = dict(old.conf)
            if body.get("workers"):
                conf["topology.workers"] = int(body["workers"])
            conf = prepare_conf(conf, topology)
            plan = make_plan(topology, conf)
            workers = int(body["workers"]) if body.get("workers") else None
            changes = task_changes(before, {c: len(plan.component_tasks[c]) for c in parallelism})
            reason = (live_refusal(topology, conf, before, changes, workers, spouts=True)
                      or spark_refusal(old, topology, changes, workers))
            if reason is None:
                try:
                    reason = attempt_live(old, topology, conf, parallelism, changes, K.REBALANCING)
                except StepError as e:  # undone: the old routing stays
                    self.record = {**self.record, "rescale": dict(old.rescale or {})}
                    raise ControlError(409, f"the live rescale failed, the old routing stays: {e}") from None
                if reason is None:
                    return self._rescaled(old, parallelism)
            try:
                slots = self._check_slots(plan, conf)
                plan, notes = self._schedule(topology, conf, plan, slots, previous=old)
            except (InsufficientSlotsError, SchedulingError) as e:
                raise ControlError(409, str(e)) from None
            was_active = old.active
            old.status = K.REBALANCING
            record = old.rescale = restart_record(before, plan, reason)
            began = time.perf_counter()
            old.stop(wait_secs=float(body.get("wait_secs") or 0))
            new = TopologyMaster(self.name, topology, conf, plan, self.sc, active=was_active,
                                 code_path=old.base.code_path, version=old.base.version, secret=old.secret)
            new.placement_notes = notes
            new.errors.extend(old.errors)
            new.rescale = record
            self.master = new
            try:
                new.start()
            except Exception as e:
                record.update(status="failed", reason=f"{type(e).__name__}: {e}")
                raise
            record.update(status="done", pause_ms=round((time.perf_counter() - began) * 1000.0, 3))
            if old.debug["rate"]:
                new.set_debug(old.debug["rate"], old.debug["components"])
            return self._rescaled(new, parallelism)

    def _rescaled(self, master: TopologyMaster, parallelism: dict) -> dict:
        """Keep the rescale in the topology's record (a relaunched master starts from it); the answer."""
        plan, record = master.plan, dict(master.rescale or {})
        parallelism = {**(self.record.get("parallelism") or {}), **parallelism}
        self.record = {**self.record, "workers": plan.num_workers, "parallelism": parallelism,
                       "rescale": record}
        return {"workers": plan.num_workers,
                "tasks": {c: len(t) for c, t in plan.component_tasks.items()}, "rescale": record}

    def upgrade(self, body: dict) -> dict:
        """Run ``workers`` on ``version`` (gray upgrade, completion, rollback); ``base`` too."""
        with self._lock:
            master = self._running()
            self.record = self.store.get(K.topology_key(self.name)) or self.record
            code = self.load_version(int(body["version"]))
            difference = layout_difference(master.plan, make_plan(code.topology, code.conf))
            if difference:
                raise ControlError(409, upgrade_refusal(code.version, difference, master.conf, code.conf))
            workers = [int(w) for w in body.get("workers") or []]
            bad = [w for w in workers if not 0 <= w < master.plan.num_workers]
            if bad:
                raise ControlError(400, f"no worker {bad[0]}: the topology has workers "
                                        f"0..{master.plan.num_workers - 1}")
            timeout = float(setting(code.conf, S.START_TIMEOUT))
            if workers:
                master.run_version(workers, code, timeout)
            if body.get("base"):
                master.set_base(code)
            return {"versions": master.worker_versions()}

    def kill(self, body: dict) -> dict:
        """Deactivate, wait ``wait_secs``, stop every worker, then end this application."""
        with self._lock:
            master = self._running()
            if self.autoscaler is not None:
                self.autoscaler.stop()
            master.status = K.KILLED
            master.stop(wait_secs=float(body.get("wait_secs") or 0))
        self.state = K.STOPPED
        self._exit.set()
        return {"stopped": True}


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:500]


# the young generation's threshold in the driver (Python's default: 700 allocations)
MASTER_GC_YOUNG = 50_000


def tune_gc() -> None:
    """Fit the cycle collector to the driver: a process that decodes 1,000 heartbeats a second.

    The master keeps every worker's last heartbeat (at 1,000 workers, some 300,000 objects,
    replaced each second); with Python's default thresholds the churn of decoding them set
    off a full collection, which walks all of them, several times a second. Heartbeats hold
    no reference cycles and are freed by reference counting, so the young generation is
    collected less often: a full collection comes every few million allocations, not every
    hundred thousand (docs/scale.md, "How the control plane holds at scale": "The driver's
    process"). Only the driver's process is tuned (``main``).
    """
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, MASTER_GC_YOUNG), middle, old)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the application's driver (see the module docstring)."""
    tune_gc()
    parser = argparse.ArgumentParser(prog="squall-topology-master")
    parser.add_argument("--store", required=True, help="the Nimbus store URI")
    parser.add_argument("--blobs", required=True, help="the blob store directory")
    parser.add_argument("--name", required=True, help="the topology's name")
    parser.add_argument("--epoch", required=True, type=int, help="this launch's epoch")
    parser.add_argument("--log-dir", default=None, help="where Spark's own log goes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s squall master {args.name} pid {os.getpid()} "
                               f"%(levelname)s %(name)s: %(message)s")
    store = open_store(args.store, auth=os.environ.get("SQUALL_ZK_AUTH") or None)
    try:
        return TopologyApp(store, BlobStore(args.blobs), args.name, args.epoch, args.log_dir).run()
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
