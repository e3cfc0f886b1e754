"""Nimbus operations: submit, list, info, errors, activate, deactivate, rebalance, kill.

The submission flow of JStorm's seed documents: validate again, refuse a name already
running, give the topology an id, store code and configuration, plan its tasks (the
master does, from the stored version), launch its Spark application and wait for its
workers with a bounded timeout, reporting a failure in one line.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import cloudpickle

from squall.api.errors import InvalidTopologyError
from squall.nimbus import clusterconf, gray
from squall.nimbus.core import NimbusCore, history_key, log
from squall.nimbus.errors import Conflict, InvalidRequest, NimbusError
from squall.nimbus.replication import forget, holders
from squall.nimbus.validation import check_topology_name, decode_upload, json_conf
from squall.runtime.errors import without_texts
from squall.runtime.exactly_once_checks import check_spout_rescale
from squall.runtime.submission import prepare_conf, with_parallelism
from squall.store import keys as K
from squall.store import taskrecords

MESSAGE_TIMEOUT = "topology.message.timeout.secs"
START_INACTIVE = "squall.topology.start.inactive"


def positive_int(value: Any, what: str) -> int:
    """``value`` if it is an integer >= 1, else ``InvalidRequest`` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequest(f"{what} must be a positive integer, got {value!r}")
    return value


class Lifecycle(NimbusCore):
    """The operations of the module docstring."""

    # ---- submit ------------------------------------------------------------------------

    def submit(self, body: dict) -> dict:
        """Validate, store and launch a new topology; returns its summary once it runs."""
        self.require_leader()
        name = check_topology_name(body.get("name"))
        upload = decode_upload(self.with_cluster_conf(body), self.config.max_task_parallelism)
        conf = json_conf(upload.conf)
        active = not conf.get(START_INACTIVE)
        with self.operation(name, "the submit"):
            topology_id = f"{name}-{int(time.time())}-{secrets.token_hex(3)}"
            rec = {
                "name": name, "id": topology_id, "secret": secrets.token_hex(32),
                "status": K.ACTIVE if active else K.INACTIVE, "active": active,
                "version": 1, "versions": [1], "workers": None, "num_workers": upload.workers,
                "parallelism": upload.parallelism, "epoch": 1, "upgrade": None,
                "spark_master": conf.get("squall.spark.master") or self.config.spark_master,
                "submitted": self.now(), "version_since": self.now(), "state": "LAUNCHING",
                "restarts": 0, "last_error": None,
                "message_timeout_secs": float(conf.get(MESSAGE_TIMEOUT) or 30),
            }
            if not self.store.create(K.topology_key(name), rec):
                raise Conflict(f"topology {name!r} is already running; kill it first or pick another name")
            taskrecords.delete_beat_parts(self.store, name)
            for key in K.master_key(name), *K.task_record_keys(name):  # left by an earlier topology
                self.store.delete(key)
            try:
                replication = self.store_version(name, topology_id, 1, code=upload.code,
                                                 topology=upload.topology_bytes, conf=conf)
                self.start(rec)
            except BaseException:
                self.store.delete(K.topology_key(name))
                self.store.delete(K.master_key(name))
                forget(self.store, topology_id)
                self.blobs.remove(topology_id)
                self.launches.pop(name, None)
                raise
            log.info("topology %r submitted as %s; %s", name, topology_id, replication.message())
            self.notify(name, "submitTopology")
            return {**self.summary(self.record(name)), "replication": replication.as_dict()}

    # ---- reads -------------------------------------------------------------------------

    def summary(self, rec: dict) -> dict:
        """One row of ``list``."""
        m = self.master(rec["name"]) or {}
        figures = m.get("summary") or {} if m.get("epoch") == rec["epoch"] else {}
        upgrade = rec.get("upgrade")
        return {
            "name": rec["name"], "id": rec["id"], "status": rec["status"], "version": rec["version"],
            "num_workers": figures.get("workers", rec.get("num_workers")),
            "num_tasks": figures.get("tasks"), "uptime_secs": self.uptime(rec),
            "emitted": figures.get("emitted"), "acked": figures.get("acked"),
            "failed": figures.get("failed"), "num_errors": figures.get("errors"),
            "master": rec.get("state"),
            "upgrade": None if not upgrade else {
                "from": upgrade["from"], "to": upgrade["to"], "workers": upgrade["workers"],
                "state": gray.state_of(upgrade)},
            "spark_master": rec["spark_master"],
        }

    def uptime(self, rec: dict) -> float:
        """Seconds since ``rec``'s topology was submitted (Storm's uptime: from its launch).

        Nimbus's own clock and the record, so the figure never waits for (or freezes with) a
        master's heartbeat; relaunches of the master and upgrades do not reset it, as Storm's
        launch time is kept across them.
        """
        return round(max(0.0, self.now() - float(rec.get("submitted") or self.now())), 3)

    def list_topologies(self) -> list[dict]:
        """Every topology in the store, by name."""
        recs = self.store.children(K.TOPOLOGIES)
        return [self.summary(recs[n]) for n in sorted(recs)]

    def info(self, name: str, texts: bool = True, per_task: bool = True) -> dict:
        """Record, master and live figures of ``name`` (components, workers, errors).

        ``texts=False``: errors without message and traceback (``runtime.errors.without_texts``),
        for readers that only count them. ``per_task=False`` (with texts): no per-task
        figures (``by_task``) and no task list, for the topology page (``/info/components``).
        """
        rec = self.record(name)
        out: dict[str, Any] = self.summary(rec)
        out.update(versions=rec["versions"], submitted=rec["submitted"], restarts=rec.get("restarts", 0),
                   last_error=rec.get("last_error"), epoch=rec["epoch"],
                   components={}, workers=[], errors=[], tasks=[], autoscale=None)
        m = self.master(name) or {}
        out["master"] = {"state": rec.get("state"), "pid": m.get("pid"), "host": m.get("host"),
                         "app_id": m.get("app_id"), "registered_epoch": m.get("epoch")}
        held = holders(self.store, rec["id"], rec["version"])
        out["replication"] = {"count": len(held), "holders": sorted(held.values())}
        live = None
        if self.live_master(rec) is not None:
            try:
                route = "/info/brief" if not texts else "/info" if per_task else "/info/components"
                live = self.master_info(rec, route, timeout=10.0)
            except NimbusError as e:
                out["master"]["error"] = str(e)
            else:
                if not texts:  # an older master answered its whole /info (``master_info``)
                    live["errors"] = without_texts(live["errors"])
                out["master"]["store_beat_failures"] = live.get("store_beat_failures")
                out.update(components=live["components"], workers=live["workers"],
                           errors=live["errors"], master_uptime_secs=live["uptime_secs"],
                           tasks=live.get("tasks", []),  # per task: last heartbeat and progress
                           autoscale=live.get("autoscale"))
        # the last rescale (API.md, Rescaling): the master's, else what the record kept
        out["rescale"] = (live or {}).get("rescale") or rec.get("rescale")
        if live is None:  # no master answers (relaunching, or down): what the last one stored
            stored = taskrecords.errors_from(self.store.get(K.task_errors_key(name)))
            out.update(errors=stored if texts else without_texts(stored),
                       tasks=taskrecords.tasks_from(taskrecords.read_beats(self.store, name), time.time()))
        out["assignment"] = self.store.get(K.assignment_key(name))
        now = self.now()
        num = len(out["workers"]) or rec.get("num_workers") or 0
        up = rec.get("upgrade")
        out["upgrade"] = gray.describe(up, num, now)
        out["last_upgrade"] = gray.describe(rec.get("last_upgrade"), num, now)
        since = {int(k): v for k, v in (up or {}).get("since", {}).items()}
        for w in out["workers"]:  # which code each worker runs, and since when
            on_new = up is not None and w.get("version") == up["to"] and w["worker"] in since
            w["version_since"] = since[w["worker"]] if on_new else rec.get("version_since", rec["submitted"])
        return out

    def effective_conf(self, name: str) -> dict:
        """The configuration ``name`` runs with, each value with where it came from.

        Lowest first: squall's defaults, the cluster file, the topology's ``Config``,
        what a rebalance changed; then each component's own configuration.
        """
        rec = self.record(name)
        blobs = self.blobs.version(rec["id"], rec["version"])
        topology = cloudpickle.loads(blobs.topology_bytes())
        overrides = {}
        if rec.get("workers"):
            overrides["topology.workers"] = (rec["workers"], "rebalance")
        out = clusterconf.sources(blobs.conf(), {c: dict(s.conf) for c, s in topology.components.items()},
                                  overrides)
        parallelism = {c: s.parallelism for c, s in topology.components.items()}
        parallelism.update(rec.get("parallelism") or {})
        return {"name": name, "version": rec["version"], **out, "parallelism": parallelism}

    def errors(self, name: str) -> list[dict]:
        """The errors ``name``'s components reported (newest last)."""
        return self.info(name)["errors"]

    # ---- activate, deactivate, rebalance, kill ------------------------------------------

    def set_active(self, name: str, active: bool) -> dict:
        """Activate or deactivate the spouts of ``name``."""
        self.require_leader()
        verb = "activate" if active else "deactivate"
        with self.operation(name, verb):
            rec = self.record(name)
            self.control(rec, "POST", f"/{verb}")
            self.notify(name, verb)
            status = rec["status"]
            if status in (K.ACTIVE, K.INACTIVE):
                status = K.ACTIVE if active else K.INACTIVE
            return self.summary(self.update(name, active=active, status=status))

    def rebalance(self, name: str, body: dict) -> dict:
        """New worker count and/or parallelism for ``name``; tuples replay, state moves."""
        self.require_leader()
        workers = body.get("workers")
        if workers is not None:
            positive_int(workers, "rebalance: the worker count")
        parallelism = body.get("parallelism") or {}
        if not isinstance(parallelism, dict):
            raise InvalidRequest("rebalance: 'parallelism' must map components to task counts")
        for cid, n in parallelism.items():
            positive_int(n, f"rebalance: the parallelism of {cid!r}")
        if workers is None and not parallelism:
            raise InvalidRequest("rebalance needs a worker count or a component's parallelism")
        wait = float(body.get("wait_secs") or 0)
        with self.operation(name, "the rebalance"):
            rec = self.record(name)
            up = rec.get("upgrade")
            if gray.is_open(up):
                assert up is not None
                where = gray.versions_text(up, rec["num_workers"])
                raise Conflict(f"topology {name!r} is being upgraded ({where}); "
                               f"complete-upgrade or rollback first (or let it expire)")
            if rec["status"] not in (K.ACTIVE, K.INACTIVE, K.UPGRADING):
                raise Conflict(f"topology {name!r} is {rec['status']}; rebalance it once that is over")
            if parallelism:
                self.check_spout_positions(rec, parallelism)
            if up:  # expired: every worker restarts on the base version
                log.warning("topology %r: the rebalance ends the expired upgrade to version %d (%s)",
                            name, up["to"], gray.versions_text(up, rec["num_workers"]))
            self.update(name, status=K.REBALANCING)
            try:
                result = self.control(rec, "POST", "/rebalance",
                                      {"workers": workers, "parallelism": parallelism, "wait_secs": wait,
                                       "drop_upgrade": bool(up)},
                                      timeout=wait + self.config.submit_timeout_secs)
            finally:
                self.update(name, status=self.status_after(rec))
            merged = {**(rec.get("parallelism") or {}), **parallelism}
            ended = {}
            if up:
                ended = {"upgrade": None,
                         "last_upgrade": {**gray.ended(up, gray.EXPIRED, self.now()), "workers": [],
                                          "ended_by": "rebalance: every worker back on the base version"}}
            rec = self.update(name, workers=result["workers"], num_workers=result["workers"],
                              parallelism=merged, rescale=result.get("rescale"), **ended)
            self.notify(name, "rebalance")
            return self.summary(rec)

    def check_spout_positions(self, rec: dict, parallelism: dict) -> None:
        """Refuse a change of an exactly-once spout's task count it cannot follow.

        ``InvalidRequest`` (one line, naming the spout) when the spout has no
        ``merge_positions``: its new tasks could not start from the old tasks' positions.
        """
        blobs = self.blobs.version(rec["id"], rec["version"])
        try:
            topology = cloudpickle.loads(blobs.topology_bytes())
        except Exception as e:  # noqa: BLE001 - unreadable here: the master checks what it can
            log.warning("topology %r: its spouts' positions cannot be checked: %s", rec["name"], e)
            return
        try:
            conf = prepare_conf(blobs.conf(), topology)
            before = with_parallelism(topology, rec.get("parallelism") or {})
            check_spout_rescale(conf, before, with_parallelism(before, parallelism))
        except InvalidTopologyError as e:
            raise InvalidRequest(f"rebalance: {e}") from None

    def kill(self, name: str, wait_secs: float | None) -> dict:
        """Deactivate, wait (default: the message timeout), stop everything, free all."""
        self.require_leader()
        if wait_secs is not None and wait_secs < 0:
            raise InvalidRequest(f"kill: the wait must be >= 0 seconds, got {wait_secs}")
        with self.operation(name, "the kill"):
            rec = self.record(name)
            wait = rec.get("message_timeout_secs", 30.0) if wait_secs is None else wait_secs
            rec = self.update(name, status=K.KILLED)
            self.finish_kill(rec, wait)
            self.notify(name, "killTopology")
            return {"name": name, "status": K.KILLED}

    def finish_kill(self, rec: dict, wait_secs: float) -> None:
        """Stop ``rec``'s master and delete everything of it (also for a kill cut short)."""
        name = rec["name"]
        self.stop_master(rec, wait_secs)
        self.store.delete(K.topology_key(name))
        self.store.delete(K.master_key(name))
        taskrecords.delete_beat_parts(self.store, name)
        for key in K.task_record_keys(name):
            self.store.delete(key)
        self.store.delete(history_key(name))
        forget(self.store, rec["id"])
        self.blobs.remove(rec["id"])
        log.info("topology %r (%s) killed", name, rec["id"])
