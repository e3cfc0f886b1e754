"""Hot deploy and gray upgrade (seed document 001: 热部署 and 灰度发布).

Hot deploy (``upgrade NAME FILE``): the new version's code and configuration replace the
running ones. As in JStorm it is a kill and a submit under the same name: spouts are
deactivated, bolts drain for ``wait_secs``, the old master stops and a new one starts the
new version. State survives because state namespaces are per topology name; spouts
replay what was in flight. If the new version cannot start, the old one is started again.

Gray upgrade, in batches as JStorm's routine goes: ``upgrade NAME FILE`` with a selector
(``--workers``, ``--component [--worker-num N]``, ``--worker-num N``, or the same as
``topology.upgrade.workers``, ``topology.upgrade.component``, ``topology.upgrade.worker.num``
in the new version's configuration) moves only the chosen workers to the new version
(see ``gray.select_workers``); it needs an ACTIVE topology, and the new code runs under the
running topology's shape (its worker count and parallelism, as rebalanced), since both
versions run side by side: the components, groupings and streams must match. The
topology is UPGRADING meanwhile. Another ``upgrade NAME [FILE] --worker-num N`` continues
the open upgrade with N more workers (JStorm's ``continueUpgrading``; the same FILE, or
none); ``complete-upgrade`` moves the remaining workers; ``rollback`` moves every upgraded
worker back. Upgrading every worker completes the upgrade by itself. An upgrade left
alone for ``topology.upgrade.expire.secs`` expires (``gray``). The topology master
restarts the workers; Nimbus records the progress in the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import cloudpickle

from squall.nimbus import gray
from squall.nimbus.core import log
from squall.nimbus.errors import Conflict, InvalidRequest, NimbusError
from squall.nimbus.gray import select_workers
from squall.nimbus.lifecycle import Lifecycle
from squall.nimbus.validation import Upload, decode_upload, gray_difference, json_conf, running_parallelism
from squall.store import keys as K

__all__ = ["Nimbus", "select_workers"]


def same_code(stored_code: bytes, stored_conf: dict, upload: Upload) -> bool:
    """Whether ``upload`` is the stored version again (its upgrade keys aside)."""
    def strip(conf: dict) -> dict:
        return {k: v for k, v in json.loads(json.dumps(conf)).items() if k not in gray.UPGRADE_KEYS}
    return stored_code == upload.code and strip(stored_conf) == strip(upload.conf)


class Nimbus(Lifecycle):
    """Every Nimbus operation: ``Lifecycle``'s plus the upgrades of the module docstring."""

    def upgrade(self, name: str, body: dict) -> dict:
        """Hot deploy, gray upgrade, or the next batch of the open gray upgrade of ``name``."""
        self.require_leader()
        selector = body.get("gray") or {}
        if not isinstance(selector, dict):
            raise InvalidRequest("'gray' must be an object: workers, component and/or worker_num")
        upload = None
        if body.get("code") is not None or body.get("topology") is not None:
            upload = decode_upload(self.with_cluster_conf(body), self.config.max_task_parallelism)
            json_conf(upload.conf)
            selector = selector or gray.selector_from_conf(upload.conf)
            gray.expire_secs(upload.conf)  # a bad value is refused before anything changes
        with self.operation(name, "the upgrade"):
            rec = self.record(name)
            up = rec.get("upgrade")
            state = gray.state_of(up)
            if state in gray.OPEN:
                assert up is not None
                return self._continue(rec, up, upload, selector)
            if upload is None:
                raise InvalidRequest(f"topology {name!r} has no gray upgrade to continue; "
                                     f"an upgrade needs the new version's FILE")
            status = rec["status"]
            if state == gray.EXPIRED and status == K.UPGRADING:
                status = self.status_after(rec)
            if status not in (K.ACTIVE, K.INACTIVE):
                raise Conflict(f"topology {name!r} is {status}; upgrade it once that is over")
            if selector:
                if status != K.ACTIVE:
                    raise Conflict(f"a gray upgrade needs an ACTIVE topology, and {name!r} is {status}: "
                                   f"activate it first (or hot deploy without a selector)")
                return self._gray_upgrade(rec, upload, selector)
            return self._hot_deploy(rec, upload, float(body.get("wait_secs") or 0))

    def _new_version(self, rec: dict, upload: Upload) -> int:
        version = max(rec["versions"]) + 1
        self.store_version(rec["name"], rec["id"], version, code=upload.code, topology=upload.topology_bytes,
                           conf=upload.conf)
        self.update(rec["name"], versions=[*rec["versions"], version])
        return version

    def _hot_deploy(self, rec: dict, upload: Upload, wait_secs: float) -> dict:
        name = rec["name"]
        version = self._new_version(rec, upload)
        self.update(name, status=K.UPGRADING)
        self.stop_master(rec, wait_secs)
        master = upload.conf.get("squall.spark.master") or rec["spark_master"]
        expired = rec.get("upgrade")  # an expired gray upgrade: every worker gets the new code
        last = gray.ended(expired, gray.EXPIRED, self.now()) if expired else rec.get("last_upgrade")
        new = self.update(name, version=version, epoch=rec["epoch"] + 1, parallelism=upload.parallelism,
                          workers=None, num_workers=upload.workers, spark_master=master, state="LAUNCHING",
                          upgrade=None, last_upgrade=last,
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
        self.notify(name, "upgrade")
        return self.summary(self.update(name, status=self.status_after(rec), version_since=self.now()))

    def _gray_upgrade(self, rec: dict, upload: Upload, selector: dict) -> dict:
        name = rec["name"]
        running = self.blobs.version(rec["id"], rec["version"])
        current = cloudpickle.loads(running.topology_bytes())
        parallelism = running_parallelism(current, rec.get("parallelism") or {})
        difference = gray_difference(current, parallelism, upload.topology)
        if difference:
            raise InvalidRequest(f"gray upgrade runs the new code under the running topology's shape, but "
                                 f"{difference}; or use a hot deploy (upgrade without "
                                 f"--workers/--component/--worker-num)")
        live = self.control(rec, "GET", "/info", timeout=10.0)
        tasks = {c: f["tasks"] for c, f in live["components"].items()}
        chosen = select_workers(live["workers"], tasks, selector, set())
        expired = rec.get("upgrade")
        if expired:  # its workers go back to the base version before a new upgrade starts
            log.warning("topology %r: the expired upgrade to version %d is rolled back first (%s)",
                        name, expired["to"], gray.versions_text(expired, len(live["workers"])))
            self._move(rec, expired["from"], expired["workers"], base=False)
            rec = self.update(name, upgrade=None, last_upgrade=gray.ended(expired, gray.EXPIRED, self.now()))
        version = self._new_version(rec, upload)
        # every version, and a relaunched master, runs under the running shape from now on
        rec = self.update(name, workers=rec.get("num_workers") or upload.workers, parallelism=parallelism)
        up = gray.begin(rec["version"], version, selector, gray.expire_secs(upload.conf), self.now())
        return self._batch(rec, up, chosen, selector, len(live["workers"]), action="grayUpgrade")

    def _continue(self, rec: dict, up: dict, upload: Upload | None, selector: dict) -> dict:
        """The next batch of the open upgrade (JStorm's ``continueUpgrading``)."""
        name = rec["name"]
        num = rec.get("num_workers") or 0
        where = gray.versions_text(up, num)
        if up.get("state") == gray.IN_PROGRESS:  # its Nimbus died during the batch: ask the master
            running = self._running_version(rec, up["to"], fallback=up["workers"])
            up = gray.finish_batch(up, running, self.now(), "interrupted: Nimbus stopped during the batch")
            rec = self.update(name, upgrade=up)
            where = gray.versions_text(up, num)
        if upload is not None:
            blobs = self.blobs.version(rec["id"], up["to"])
            if not same_code(Path(blobs.code_path).read_bytes(), blobs.conf(), upload):
                raise Conflict(f"topology {name!r} is being upgraded to version {up['to']} ({where}); "
                               f"continue with that version's file (or none), or complete-upgrade or "
                               f"rollback first")
            if not selector:
                raise Conflict(f"topology {name!r} is being upgraded to version {up['to']} ({where}); "
                               f"continue with --worker-num N, or complete-upgrade or rollback first")
        if not rec.get("active", True):
            raise Conflict(f"a gray upgrade needs an ACTIVE topology, and {name!r} is deactivated "
                           f"({where}): activate it first")
        selector = selector or up.get("selector") or {}
        if not selector:
            raise InvalidRequest(f"topology {name!r}: say how many workers the next batch moves "
                                 f"(--worker-num N or --workers); {where}")
        live = self.control(rec, "GET", "/info", timeout=10.0)
        tasks = {c: f["tasks"] for c, f in live["components"].items()}
        upgraded = set(up["workers"])
        chosen = [w for w in select_workers(live["workers"], tasks, selector, upgraded) if w not in upgraded]
        if not chosen:
            raise InvalidRequest(f"gray upgrade: the workers named already run version {up['to']} ({where})")
        return self._batch(rec, up, chosen, selector, len(live["workers"]), action="grayUpgrade")

    def _batch(self, rec: dict, up: dict, chosen: list[int], selector: dict, num_workers: int,
               action: str) -> dict:
        """Move ``chosen`` to the upgrade's version and record how far it got."""
        name = rec["name"]
        up = gray.ask_batch(up, chosen, selector, self.now())
        rec = self.update(name, status=K.UPGRADING, upgrade=up)
        everyone = set(up["workers"]) | set(chosen) >= set(range(num_workers))
        try:
            self._move(rec, up["to"], chosen, base=everyone)
        except NimbusError as e:
            running = self._running_version(rec, up["to"], fallback=up["workers"])
            if not running and not up["workers"]:
                self.update(name, status=self.status_after(rec), upgrade=None, last_error=str(e))
            else:
                self.update(name, upgrade=gray.finish_batch(up, running, self.now(), str(e)),
                            last_error=str(e))
            raise
        now = self.now()
        up = gray.finish_batch(up, sorted(set(up["workers"]) | set(chosen)), now)
        self.notify(name, action)
        if everyone:
            log.info("topology %r: gray upgrade to version %d reached every worker: complete", name, up["to"])
            rec = self.update(name, version=up["to"], upgrade=None, status=self.status_after(rec),
                              last_upgrade=gray.ended(up, gray.COMPLETED, now), version_since=now)
            return self.summary(rec)
        log.info("topology %r: workers %s upgraded to version %d (%s)", name, chosen, up["to"],
                 gray.versions_text(up, num_workers))
        return self.summary(self.update(name, upgrade=up))

    def _running_version(self, rec: dict, version: int, fallback: list[int]) -> list[int]:
        """The workers the master runs on ``version`` (``fallback`` if it cannot say)."""
        try:
            live = self.control(rec, "GET", "/info", timeout=10.0)
        except NimbusError:
            return list(fallback)
        return sorted(w["worker"] for w in live["workers"] if w.get("version") == version)

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
        if not rec.get("upgrade"):
            raise Conflict(f"topology {name!r} is not being upgraded (it is {rec['status']})")
        return rec, rec["upgrade"]

    def complete_upgrade(self, name: str) -> dict:
        """Move every remaining worker to the new version; the upgrade is over."""
        self.require_leader()
        with self.operation(name, "complete-upgrade"):
            rec, up = self._upgrading(name)
            remaining = [i for i in range(rec["num_workers"]) if i not in up["workers"]]
            self._move(rec, up["to"], remaining, base=True)
            now = self.now()
            log.info("topology %r: upgrade to version %d completed", name, up["to"])
            self.notify(name, "completeUpgrade")
            everyone = list(range(rec["num_workers"]))
            done = gray.ended(gray.finish_batch(up, everyone, now), gray.COMPLETED, now)
            return self.summary(self.update(name, version=up["to"], upgrade=None, last_upgrade=done,
                                            status=self.status_after(rec), version_since=now))

    def rollback(self, name: str) -> dict:
        """Move every upgraded worker back to the version it ran; the upgrade is over."""
        self.require_leader()
        with self.operation(name, "the rollback"):
            rec, up = self._upgrading(name)
            # the master's word on who runs what: a batch that failed half-way counts too
            back = sorted(set(up["workers"]) | {
                i for i in range(rec["num_workers"]) if i in self._running_version(rec, up["to"], [])})
            self._move(rec, up["from"], back, base=True)
            now = self.now()
            log.info("topology %r: upgrade to version %d rolled back to %d (workers %s)", name, up["to"],
                     up["from"], back)
            self.notify(name, "rollback")
            done = gray.ended({**up, "workers": back}, gray.ROLLED_BACK, now)
            return self.summary(self.update(name, version=up["from"], upgrade=None, last_upgrade=done,
                                            status=self.status_after(rec)))
