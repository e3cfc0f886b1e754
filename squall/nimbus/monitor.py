"""The leader's watch over topology masters: relaunch the dead, finish interrupted kills.

Every second, for each topology record: a master is dead when its registration for the
record's epoch says FAILED or STOPPED, when its heartbeat counter has not moved for
``master_timeout_secs`` (measured on this Nimbus's monotonic clock, so wall-clock jumps
do not matter and a freshly started Nimbus gives every master a full timeout), when its
launch process on this host has exited, or when a launch never registered within the
submit timeout. A dead master is relaunched under a new epoch (which fences the old one,
should it still be running somewhere), after a backoff that doubles with each restart,
from this Nimbus's own copy of the code (checked against its digest, and fetched from
another Nimbus first if it is missing or corrupt: ``squall.nimbus.replication``).
Its workers recover as after any failure: stateful bolts from their last checkpoint,
spouts by replaying. Topologies busy with an operation are left to that operation; a
malformed record (``keys.check_record``: forged or corrupted) is reported and left alone.
"""

from __future__ import annotations

import logging
import threading
import time

from squall.nimbus import gray
from squall.nimbus.errors import NimbusError
from squall.nimbus.launcher import pid_alive, stop_group
from squall.nimbus.upgrades import Nimbus
from squall.store import StoreError
from squall.store import keys as K

log = logging.getLogger("squall.nimbus.monitor")
CHECK_SECS = 1.0
BACKOFF_MAX = 60.0


def backoff(restarts: int) -> float:
    """Seconds between relaunches of a master that died ``restarts`` times already."""
    return 0.0 if restarts <= 0 else min(BACKOFF_MAX, 2.0 ** min(restarts, 6))


class Monitor:
    """Watches the topology masters while this Nimbus leads (see the module docstring)."""

    def __init__(self, nimbus: Nimbus) -> None:
        self.nimbus = nimbus
        self._seen: dict[str, tuple[int, int, float]] = {}  # name -> (epoch, beat, when it moved)
        self._bad: dict[str, dict] = {}  # malformed records already reported
        self._first: dict[tuple, tuple[float, float]] = {}  # stamp -> (monotonic, elapsed) when seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="squall-nimbus-monitor", daemon=True)

    def start(self) -> None:
        """Start watching in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.wait(CHECK_SECS):
            if not self.nimbus.election.is_leader():
                self._seen.clear()  # a leader-to-be starts its observations afresh
                continue
            try:
                self.check_all()
            except StoreError as e:
                log.warning("monitor: the store is unavailable: %s", e)
            except Exception:  # noqa: BLE001 - the monitor must outlive any one bad record
                log.exception("monitor: error while checking topologies")

    def check_all(self) -> None:
        """One round over every topology record."""
        records = self.nimbus.store.children(K.TOPOLOGIES)
        for name in list(self._seen):
            if name not in records:
                del self._seen[name]
        for name, rec in records.items():
            try:
                K.check_record(name, rec)
            except K.RecordError as e:
                if self._bad.get(name) != rec:  # once per version of a bad record
                    log.error("monitor: %s; left alone", e)
                    self._bad[name] = rec
                continue
            lock = self.nimbus.try_operation(name)
            if lock is None:
                continue  # an operation is under way and owns the topology
            try:
                self.check(name, rec)
            finally:
                lock.release()

    def check(self, name: str, rec: dict) -> None:
        """Decide about one topology (holding its operation lock)."""
        nimbus = self.nimbus
        if rec.get("status") == K.KILLED:  # a kill cut short (Nimbus died in it): finish it
            log.warning("topology %r: finishing a kill that was interrupted", name)
            nimbus.finish_kill(rec, 0.0)
            return
        up = rec.get("upgrade")
        if up and gray.is_open(up) and gray.is_expired(
                up, self.elapsed(("upgrade", name), float(up.get("updated") or 0))):
            why = (f"the gray upgrade to version {up['to']} made no progress for "
                   f"{float(up.get('expire_secs', 0)):.0f}s and expired; "
                   f"{gray.versions_text(up, rec.get('num_workers') or 0)}")
            log.warning("topology %r: %s", name, why)
            status = nimbus.status_after(rec) if rec["status"] == K.UPGRADING else rec["status"]
            rec = nimbus.update(name, upgrade=gray.expire(up, nimbus.now()), status=status, last_error=why)
        reason = self.dead_reason(name, rec)
        if reason is None:
            return
        since = self.elapsed(("relaunched", name), float(rec.get("relaunched_at") or 0))
        if since < backoff(int(rec.get("restarts") or 0)):
            return
        self.relaunch(name, rec, reason)

    def dead_reason(self, name: str, rec: dict) -> str | None:
        """Why ``name``'s master counts as dead, or None while it looks alive."""
        now = time.monotonic()
        m = self.nimbus.master(name)
        launcher = rec.get("launcher") or {}
        if m is not None and m.get("epoch") == rec["epoch"]:
            if m.get("state") in (K.FAILED, K.STOPPED):
                return f"its master {m['state'].lower()}: {m.get('error') or 'no reason given'}"
            starting = self.elapsed(("started", name), float(launcher.get("started") or time.time()))
            if m.get("state") == K.STARTING and starting > self.nimbus.config.submit_timeout_secs:
                return f"its master did not start within {starting:.0f}s"
            seen = self._seen.get(name)
            if seen is None or seen[:2] != (m["epoch"], m.get("beat")):
                self._seen[name] = (m["epoch"], m.get("beat", 0), now)
                if m.get("state") == K.RUNNING and rec.get("state") != K.RUNNING:
                    self.nimbus.update(name, state=K.RUNNING)
                return None
            if now - seen[2] > self.nimbus.config.master_timeout_secs:
                return f"no heartbeat from its master for {now - seen[2]:.0f}s"
        elif self.elapsed(("started", name), float(launcher.get("started") or 0)) > \
                self.nimbus.config.submit_timeout_secs:
            return "its master never registered"
        pid = launcher.get("pid")
        if pid and launcher.get("host") == self.nimbus.host:
            launch = self.nimbus.launches.get(name)
            exited = launch.exited() if launch is not None and launch.pid == pid else (
                None if pid_alive(pid) else -1)
            if exited is not None:
                return f"its master process exited (status {exited})"
        return None

    def elapsed(self, key: tuple, wall_start: float) -> float:
        """Seconds since ``wall_start`` (a wall-clock stamp from the store, RELIABILITY C12).

        Stamps come from other processes, so only the wall clock relates them; but once this
        Nimbus has seen a stamp, time since then is measured on its monotonic clock, so a
        wall-clock jump forward cannot make a master look late (nor back, early).
        """
        wall = time.time() - wall_start
        first = self._first.get((key, wall_start))
        if first is None:
            if len(self._first) > 10_000:
                self._first.clear()  # stamps of topologies long gone
            self._first[(key, wall_start)] = (time.monotonic(), max(0.0, wall))
            return max(0.0, wall)
        mono0, wall0 = first
        return wall0 + (time.monotonic() - mono0)

    def relaunch(self, name: str, rec: dict, reason: str) -> None:
        """Start a new master for ``name`` under a new epoch (not waiting for it)."""
        nimbus = self.nimbus
        restarts = int(rec.get("restarts") or 0) + 1
        try:
            nimbus.ensure_code(rec)  # launched from this Nimbus's own checked copy
        except NimbusError as e:
            if rec.get("last_error") != str(e):
                log.error("topology %r: %s; %s", name, reason, e)
                nimbus.update(name, last_error=str(e))
            return
        log.warning("topology %r: %s; relaunching its master (restart %d)", name, reason, restarts)
        launcher = rec.get("launcher") or {}
        if launcher.get("pid") and launcher.get("host") == nimbus.host:
            stop_group(int(launcher["pid"]), grace=2.0)
        status = rec["status"]
        if status == K.REBALANCING or (status == K.UPGRADING and not rec.get("upgrade")):
            status = nimbus.status_after(rec)  # an operation its Nimbus did not live to finish
        new = nimbus.update(name, epoch=rec["epoch"] + 1, restarts=restarts, relaunched_at=time.time(),
                            state="RELAUNCHING", last_error=reason, status=status)
        self._seen.pop(name, None)
        nimbus.launch(new)
