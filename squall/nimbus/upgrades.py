"""Hot deploy and gray upgrade (seed document 001: 热部署 and 灰度发布).

Hot deploy (``upgrade NAME FILE``): the new version's code and configuration replace the
running ones. As in JStorm it is a kill and a submit under the same name: spouts are
deactivated, bolts drain for ``wait_secs``, the old master stops and a new one starts the
new version. State survives because state namespaces are per topology name; spouts
replay what was in flight. If the new version cannot start, the old one is started again.

Gray upgrade (``upgrade NAME FILE --workers ... | --component C [--worker-num N] |
--worker-num N``): only the chosen workers restart on the new version, picked as the
seed describes (listed workers win; else a component's workers, N of them or all; else
N workers: the lowest-numbered ones not yet upgraded, deterministic rather than random).
The topology is UPGRADING meanwhile and both versions run side by side, so the new
version must have the same shape (components, streams, groupings, parallelism).
``complete-upgrade`` moves the remaining workers to the new version; ``rollback`` moves
the upgraded ones back. Upgrading every worker completes the upgrade by itself. The
topology master restarts the workers; Nimbus records the progress in the store.
"""

from __future__ import annotations

import cloudpickle

from squall.nimbus.core import log
from squall.nimbus.errors import Conflict, InvalidRequest, NimbusError
from squall.nimbus.lifecycle import Lifecycle
from squall.nimbus.validation import Upload, decode_upload, json_conf, shape_difference
from squall.store import keys as K


def select_workers(workers: list[dict], component_tasks: dict[str, list[int]], selector: dict,
                   upgraded: set[int]) -> list[int]:
    """The workers a gray upgrade picks (see the module docstring); ``InvalidRequest`` if none.

    >>> ws = [{"worker": 0, "address": "tcp://h:1", "tasks": [1, 3]},
    ...       {"worker": 1, "address": "tcp://h:2", "tasks": [2, 4]}]
    >>> select_workers(ws, {"count": [3, 4]}, {"worker_num": 1}, set())
    [0]
    >>> select_workers(ws, {"count": [3, 4]}, {"workers": ["h:2"]}, set())
    [1]
    """
    by_address = {w["address"].removeprefix("tcp://"): w["worker"] for w in workers if w.get("address")}
    indices = [w["worker"] for w in workers]
    listed = selector.get("workers")
    if listed:
        chosen = []
        for item in listed:
            item = str(item).strip()
            if item.isdigit() and int(item) in indices:
                chosen.append(int(item))
            elif item in by_address:
                chosen.append(by_address[item])
            else:
                known = ", ".join(sorted(by_address)) or "none running"
                raise InvalidRequest(f"gray upgrade: no worker {item!r}; workers are 0..{len(indices) - 1} "
                                     f"or host:port of {known}")
        return sorted(set(chosen))
    candidates = [i for i in indices if i not in upgraded]
    component = selector.get("component")
    if component:
        if component not in component_tasks or component.startswith("__"):
            raise InvalidRequest(f"gray upgrade: no component {component!r}; components: "
                                 f"{', '.join(sorted(c for c in component_tasks if not c.startswith('__')))}")
        tasks = set(component_tasks[component])
        candidates = [w["worker"] for w in workers if w["worker"] in candidates and tasks & set(w["tasks"])]
    num = selector.get("worker_num")
    if num is not None:
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise InvalidRequest(f"gray upgrade: the worker count must be a positive integer, got {num!r}")
        candidates = candidates[:num]
    elif not component:
        raise InvalidRequest("gray upgrade needs workers, a component or a worker count")
    if not candidates:
        raise InvalidRequest("gray upgrade: no worker left to upgrade that matches")
    return sorted(candidates)


class Nimbus(Lifecycle):
    """Every Nimbus operation: ``Lifecycle``'s plus the upgrades of the module docstring."""

    def upgrade(self, name: str, body: dict) -> dict:
        """Hot deploy (no ``gray`` in ``body``) or gray upgrade of ``name``."""
        self.require_leader()
        upload = decode_upload(body, self.config.max_task_parallelism)
        json_conf(upload.conf)
        gray = body.get("gray")
        with self.operation(name, "the upgrade"):
            rec = self.record(name)
            if rec["status"] == K.UPGRADING and rec.get("upgrade"):
                up = rec["upgrade"]
                raise Conflict(f"topology {name!r} is being upgraded ({len(up['workers'])} of "
                               f"{rec['num_workers']} workers on version {up['to']}); "
                               f"complete-upgrade or rollback first")
            if rec["status"] not in (K.ACTIVE, K.INACTIVE):
                raise Conflict(f"topology {name!r} is {rec['status']}; upgrade it once that is over")
            if gray:
                return self._gray_upgrade(rec, upload, gray)
            return self._hot_deploy(rec, upload, float(body.get("wait_secs") or 0))

    def _new_version(self, rec: dict, upload: Upload) -> int:
        version = max(rec["versions"]) + 1
        self.blobs.write(rec["id"], version, code=upload.code, topology=upload.topology_bytes,
                         conf=upload.conf)
        self.update(rec["name"], versions=[*rec["versions"], version])
        return version

    def _hot_deploy(self, rec: dict, upload: Upload, wait_secs: float) -> dict:
        name = rec["name"]
        version = self._new_version(rec, upload)
        self.update(name, status=K.UPGRADING)
        self.stop_master(rec, wait_secs)
        master = upload.conf.get("squall.spark.master") or rec["spark_master"]
        new = self.update(name, version=version, epoch=rec["epoch"] + 1, parallelism=upload.parallelism,
                          workers=None, num_workers=upload.workers, spark_master=master, state="LAUNCHING",
                          message_timeout_secs=float(upload.conf.get("topology.message.timeout.secs") or 30))
        try:
            self.start(new)
        except NimbusError as e:
            log.error("topology %r: version %d failed to start (%s); starting version %d again",
                      name, version, e, rec["version"])
            old = self.update(name, version=rec["version"], epoch=new["epoch"] + 1,
                              parallelism=rec.get("parallelism"), workers=rec.get("workers"),
                              num_workers=rec.get("num_workers"), spark_master=rec["spark_master"],
                              status=self.status_after(rec), last_error=str(e))
            try:
                self.start(old)
            except NimbusError as e2:
                self.update(name, state=K.FAILED)
                raise NimbusError(f"{e}; restarting version {rec['version']} failed too: {e2}") from None
            raise NimbusError(f"{e}; version {rec['version']} runs again") from None
        log.info("topology %r hot-deployed: version %d", name, version)
        return self.summary(self.update(name, status=self.status_after(rec)))

    def _gray_upgrade(self, rec: dict, upload: Upload, selector: dict) -> dict:
        name = rec["name"]
        if not isinstance(selector, dict):
            raise InvalidRequest("'gray' must be an object: workers, component and/or worker_num")
        current = cloudpickle.loads(self.blobs.version(rec["id"], rec["version"]).topology_bytes())
        difference = shape_difference(current, upload.topology)
        if difference:
            raise InvalidRequest(f"gray upgrade needs the running topology's shape, but {difference}; "
                                 f"use a hot deploy (upgrade without --workers/--component/--worker-num)")
        live = self.control(rec, "GET", "/info", timeout=10.0)
        tasks = {c: f["tasks"] for c, f in live["components"].items()}
        chosen = select_workers(live["workers"], tasks, selector, set())
        version = self._new_version(rec, upload)
        upgrade = {"from": rec["version"], "to": version, "workers": [], "selector": selector}
        self.update(name, status=K.UPGRADING, upgrade=upgrade)
        everyone = len(chosen) == len(live["workers"])
        try:
            self._move(rec, version, chosen, base=everyone)
        except NimbusError:
            self.update(name, status=self.status_after(rec), upgrade=None)
            raise
        if everyone:
            log.info("topology %r: gray upgrade to version %d reached every worker: complete", name, version)
            rec = self.update(name, version=version, upgrade=None, status=self.status_after(rec))
            return self.summary(rec)
        log.info("topology %r: workers %s upgraded to version %d", name, chosen, version)
        return self.summary(self.update(name, upgrade={**upgrade, "workers": chosen}))

    def _move(self, rec: dict, version: int, workers: list[int], base: bool) -> None:
        """Have the master run ``workers`` on ``version`` (and make it the base version)."""
        timeout = self.config.submit_timeout_secs + 30
        try:
            self.control(rec, "POST", "/upgrade", {"version": version, "workers": workers, "base": base},
                         timeout=timeout)
        except NimbusError as e:
            raise type(e)(f"topology {rec['name']!r}: moving workers {workers} to version {version} "
                          f"failed: {e}") from None

    def _upgrading(self, name: str) -> tuple[dict, dict]:
        rec = self.record(name)
        if rec["status"] != K.UPGRADING or not rec.get("upgrade"):
            raise Conflict(f"topology {name!r} is not being upgraded (it is {rec['status']})")
        return rec, rec["upgrade"]

    def complete_upgrade(self, name: str) -> dict:
        """Move every remaining worker to the new version; the upgrade is over."""
        self.require_leader()
        with self.operation(name, "complete-upgrade"):
            rec, up = self._upgrading(name)
            remaining = [i for i in range(rec["num_workers"]) if i not in up["workers"]]
            self._move(rec, up["to"], remaining, base=True)
            log.info("topology %r: upgrade to version %d completed", name, up["to"])
            return self.summary(self.update(name, version=up["to"], upgrade=None,
                                            status=self.status_after(rec)))

    def rollback(self, name: str) -> dict:
        """Move the upgraded workers back to the version they ran; the upgrade is over."""
        self.require_leader()
        with self.operation(name, "the rollback"):
            rec, up = self._upgrading(name)
            self._move(rec, up["from"], up["workers"], base=True)
            log.info("topology %r: upgrade to version %d rolled back to %d", name, up["to"], up["from"])
            return self.summary(self.update(name, version=up["from"], upgrade=None,
                                            status=self.status_after(rec)))
