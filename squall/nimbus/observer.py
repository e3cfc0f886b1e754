"""What Nimbus keeps for its UI: metric history, topology shapes, and who the Nimbuses are.

A thread of its own, next to the monitor. While this Nimbus leads, every
``nimbus.history.interval.secs`` (10 s by default) it asks each running topology's master
for its figures and adds them to that topology's ``MetricHistory``; every
``PERSIST_SECS`` it writes each history to the store under ``history/<name>`` (so a
restarted or newly elected Nimbus carries on from it) and drops the history of topologies
that are gone. Every Nimbus, leader or standby, registers itself under ``nimbuses/<url>``
with a timestamp, which is how ``nimbus/summary`` lists the standbys. Topology shapes and
configurations are read from the blob store once per code version and cached.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from typing import Any

import cloudpickle

from squall.nimbus.core import HISTORY, history_key
from squall.nimbus.errors import NimbusError, NotFound
from squall.nimbus.history import MetricHistory
from squall.nimbus.structure import is_system, redact, structure
from squall.nimbus.upgrades import Nimbus
from squall.runtime import clock
from squall.store import StoreError
from squall.store import keys as K

log = logging.getLogger("squall.nimbus.observer")
NIMBUSES = "nimbuses"
PERSIST_SECS = 60.0
REGISTER_SECS = 5.0
DEAD_AFTER_SECS = 30.0


def nimbus_key(url: str) -> str:
    """The store key under which the Nimbus at ``url`` registers itself."""
    return f"{NIMBUSES}/{re.sub(r'[^A-Za-z0-9_.-]', '_', url.split('://', 1)[-1])}"


class Observer:
    """Metric history, shapes and Nimbus registrations (see the module docstring)."""

    def __init__(self, nimbus: Nimbus, interval_secs: float = 10.0) -> None:
        self.nimbus = nimbus
        self.interval = interval_secs
        self.histories: dict[str, tuple[str, MetricHistory]] = {}  # name -> (topology id, history)
        self._shapes: dict[tuple[str, int], tuple[dict, dict]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="squall-nimbus-observer", daemon=True)
        self._persisted = 0.0

    def start(self) -> None:
        """Start sampling in the background."""
        self._register()
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling, keeping what was sampled."""
        self._stop.set()
        self._thread.join(5.0)
        if self.nimbus.election.is_leader():
            try:
                self.persist()
            except StoreError as e:
                log.warning("observer: history not saved: %s", e)
        try:
            self.nimbus.store.delete(nimbus_key(self.nimbus.config.url or ""))
        except StoreError:
            pass

    # ---- the loop ----------------------------------------------------------------------

    def _run(self) -> None:
        next_sample = next_register = time.monotonic()
        while not self._stop.wait(0.5):
            now = time.monotonic()
            try:
                if now >= next_register:
                    next_register = now + REGISTER_SECS
                    self._register()
                if now >= next_sample:
                    next_sample = now + self.interval
                    if self.nimbus.election.is_leader():
                        self.sample_all()
                        if now - self._persisted >= PERSIST_SECS:
                            self.persist()
                            self._persisted = now
                    else:
                        with self._lock:
                            self.histories.clear()  # the leader's copy in the store is the truth
            except StoreError as e:
                log.warning("observer: the store is unavailable: %s", e)
            except Exception:  # noqa: BLE001 - the observer must outlive one bad topology
                log.exception("observer: sampling failed")

    def _register(self) -> None:
        n = self.nimbus
        self.nimbus.store.put(nimbus_key(n.config.url or ""), {
            "url": n.config.url, "host": n.host, "port": n.config.port, "pid": os.getpid(),
            "started": n.started, "time": time.time(), "leader": n.election.is_leader()})

    def sample_all(self) -> None:
        """One sample of every topology whose master runs."""
        records = self.nimbus.store.children(K.TOPOLOGIES)
        now = clock.time_ms() / 1000.0
        for name, rec in records.items():
            if self.nimbus.live_master(rec) is None:
                continue
            try:
                # component figures only: the whole info is 10 MB at 1,000 workers (docs/scale.md)
                live = self.nimbus.master_info(rec, "/info/components", timeout=5.0)
            except NimbusError as e:
                log.debug("observer: no figures from %r: %s", name, e)
                continue
            self.record(name, rec["id"], now, live.get("components") or {})
        with self._lock:
            for name in [n for n in self.histories if n not in records]:
                del self.histories[name]

    def record(self, name: str, topology_id: str, now: float, components: dict[str, dict]) -> None:
        """Add one sample of ``name``'s component figures to its history."""
        with self._lock:
            history = self._history_locked(name, topology_id)
            history.record(now, {c: f for c, f in components.items() if not is_system(c)})

    def persist(self) -> None:
        """Write every history to the store; delete those of topologies that are gone."""
        records = self.nimbus.store.children(K.TOPOLOGIES)
        with self._lock:
            saved = {name: (tid, h.to_json()) for name, (tid, h) in self.histories.items()}
        for name, (tid, data) in saved.items():
            if name in records and records[name]["id"] == tid:
                self.nimbus.store.put(history_key(name), {"id": tid, "history": data})
        for name, stored in self.nimbus.store.children(HISTORY).items():
            if name not in records or records[name]["id"] != stored.get("id"):
                self.nimbus.store.delete(history_key(name))

    # ---- reads for the API ----------------------------------------------------------------

    def _history_locked(self, name: str, topology_id: str) -> MetricHistory:
        held = self.histories.get(name)
        if held is not None and held[0] == topology_id:
            return held[1]
        stored = self.nimbus.store.get(history_key(name)) or {}
        history = MetricHistory.from_json(stored.get("history")) if stored.get("id") == topology_id \
            else MetricHistory()
        self.histories[name] = (topology_id, history)
        return history

    def history(self, name: str, topology_id: str) -> MetricHistory:
        """``name``'s history: this leader's, else the last one saved in the store."""
        if self.nimbus.election.is_leader():
            with self._lock:
                return self._history_locked(name, topology_id)
        stored = self.nimbus.store.get(history_key(name)) or {}
        if stored.get("id") != topology_id:
            return MetricHistory()
        return MetricHistory.from_json(stored.get("history"))

    def shape(self, rec: dict) -> tuple[dict, dict]:
        """(structure, redacted configuration) of the version ``rec`` runs."""
        key = (rec["id"], int(rec["version"]))
        with self._lock:
            cached = self._shapes.get(key)
        if cached is not None:
            return cached
        try:
            version = self.nimbus.blobs.version(rec["id"], rec["version"])
            topology = cloudpickle.loads(version.topology_bytes())
            conf = version.conf()
        except Exception as e:  # noqa: BLE001 - a missing or unreadable blob: no shape to show
            log.warning("topology %r: its shape cannot be read: %s", rec["name"], e)
            return {}, {}
        result = (structure(topology), redact(conf or {}))
        with self._lock:
            self._shapes[key] = result
        return result

    def nimbuses(self) -> list[dict]:
        """Every registered Nimbus, with Storm's status (Leader, Not a Leader, Dead)."""
        leader = (self.nimbus.election.leader() or {}).get("url")
        now = time.time()
        out = []
        for entry in self.nimbus.store.children(NIMBUSES).values():
            alive = now - float(entry.get("time") or 0) <= DEAD_AFTER_SECS
            status = "Leader" if alive and entry.get("url") == leader else "Not a Leader" if alive else "Dead"
            out.append({**entry, "status": status})
        return sorted(out, key=lambda e: (e["status"] != "Leader", str(e.get("url"))))

    def find(self, key: str) -> dict:
        """The record of the topology whose id or name is ``key``, or ``NotFound``."""
        records = self.nimbus.store.children(K.TOPOLOGIES)
        if key in records:
            return records[key]
        for rec in records.values():
            if rec["id"] == key:
                return rec
        raise NotFound(f"no topology with id or name {key!r} is running")

    def stats(self) -> dict[str, Any]:
        """Sizes of what is held in memory (for tests and the cluster page)."""
        with self._lock:
            return {"histories": len(self.histories), "shapes": len(self._shapes)}
