"""What every Nimbus operation builds on: records, locks, launching and stopping masters.

Threading: the HTTP server runs each request on a thread of its own and the monitor has
its own; every operation that changes a topology holds that topology's operation lock, so
two changes to one topology never interleave (a second one gets 409 at once rather than
waiting behind, say, a long kill). State lives in the store, never only here: what this
object keeps in memory (launch handles, heartbeat observations) only sharpens decisions
and is rebuilt after a restart.
"""

from __future__ import annotations

import contextvars
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from squall.nimbus import clusterconf
from squall.nimbus.config import NimbusConfig
from squall.nimbus.errors import Conflict, InvalidRequest, NimbusError, NotFound, NotLeader
from squall.nimbus.launcher import Launch, Launcher, pid_alive, stop_group
from squall.nimbus.masters import NoControlRoute, call_master
from squall.nimbus.notifier import ActionNotifier
from squall.nimbus.replication import (
    CodeSync,
    Replication,
    ReplicationError,
    publish,
    register_holder,
    replication_settings,
    wait_for_replication,
)
from squall.runtime import clock
from squall.store import BlobStore, Election, Store
from squall.store import keys as K

log = logging.getLogger("squall.nimbus")
# who made the request being served (``user@address``); the HTTP server sets it per request
CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("squall_nimbus_caller", default=None)

HISTORY = "history"  # history/<name>: the metric history the UI charts (squall.nimbus.observer)


def history_key(name: str) -> str:
    """The store key of topology ``name``'s metric history."""
    return f"{HISTORY}/{name}"


class NimbusCore:
    """Shared state and helpers of the Nimbus operations (see the module docstring)."""

    def __init__(self, config: NimbusConfig, store: Store, election: Election, launcher: Launcher,
                 blobs: BlobStore) -> None:
        self.config = config
        self.store = store
        self.election = election
        self.launcher = launcher
        self.blobs = blobs
        self.host = socket.gethostname()
        self.started = time.time()
        self.launches: dict[str, Launch] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.notifier: ActionNotifier | None = None
        self.sync: CodeSync | None = None  # code replication (None: this Nimbus replicates nothing)

    # ---- time, notifications, cluster defaults ------------------------------------------

    @staticmethod
    def now() -> float:
        """Seconds since the epoch, from the runtime's clock (simulated in tests)."""
        return clock.time_ms() / 1000.0

    def notify(self, name: str, action: str) -> None:
        """Tell the operator's notifier plugin (if any) of ``action`` on ``name``; never blocks."""
        if self.notifier is not None:
            self.notifier.notify(name, action, CALLER.get())

    def with_cluster_conf(self, body: dict) -> dict:
        """The upload ``body`` with the cluster file's topology defaults under its ``conf``.

        The keys the defaults gave are listed in ``squall.conf.cluster.keys`` of the stored
        configuration, so ``info --conf`` can say where each value came from.
        """
        conf = body.get("conf") or {}
        defaults = self.config.topology_defaults
        if not defaults or not isinstance(conf, dict):
            return body
        merged, taken = clusterconf.layered(defaults, conf)
        if taken:
            merged[clusterconf.CLUSTER_KEYS] = taken
            merged[clusterconf.CLUSTER_FILE] = self.config.conf_file
        return {**body, "conf": merged}

    # ---- leadership and locks ----------------------------------------------------------

    def require_leader(self) -> None:
        """Raise ``NotLeader`` (naming the leader) unless this Nimbus leads."""
        if self.election.is_leader():
            return
        leader = self.election.leader() or {}
        url = leader.get("url")
        where = f"; the leader is {url}" if url else "; no leader is elected yet"
        raise NotLeader(f"this Nimbus ({self.config.url}) is a standby{where}", leader=url)

    @contextmanager
    def operation(self, name: str, what: str) -> Iterator[None]:
        """Hold topology ``name``'s operation lock, or raise ``Conflict`` if it is taken."""
        with self._locks_guard:
            lock = self._locks.setdefault(name, threading.Lock())
        if not lock.acquire(blocking=False):
            raise Conflict(f"topology {name!r} is busy with another operation; try {what} again "
                           f"once it is done")
        try:
            yield
        finally:
            lock.release()

    def try_operation(self, name: str) -> threading.Lock | None:
        """The lock of ``name`` if it was free (now held by the caller), else None."""
        with self._locks_guard:
            lock = self._locks.setdefault(name, threading.Lock())
        return lock if lock.acquire(blocking=False) else None

    # ---- records -----------------------------------------------------------------------

    def record(self, name: str) -> dict:
        """Topology ``name``'s record, or ``NotFound``."""
        rec = self.store.get(K.topology_key(name))
        if rec is None:
            raise NotFound(f"no topology named {name!r} is running")
        try:
            return K.check_record(name, rec)  # ids become paths, secrets keys: never trusted raw
        except K.RecordError as e:
            log.error("%s", e)
            raise NimbusError(str(e)) from None

    def update(self, name: str, **changes: Any) -> dict:
        """Apply ``changes`` to the record of ``name`` (which must exist)."""
        def apply(old: dict | None) -> dict:
            if old is None:
                raise NotFound(f"no topology named {name!r} is running")
            return {**old, **changes}
        new = self.store.update(K.topology_key(name), apply)
        assert new is not None
        return new

    def master(self, name: str) -> dict | None:
        """The registration of ``name``'s topology master, if any (a malformed one is none)."""
        reg = self.store.get(K.master_key(name))
        if reg is None:
            return None
        try:
            return K.check_master(name, reg)
        except K.RecordError as e:
            log.error("%s; ignored", e)
            return None

    def live_master(self, rec: dict) -> dict | None:
        """The master registration of the record's epoch, if it is running."""
        m = self.master(rec["name"])
        if m and m.get("epoch") == rec["epoch"] and m.get("state") == K.RUNNING and m.get("control"):
            return m
        return None

    def control(self, rec: dict, method: str, path: str, body: dict | None = None,
                timeout: float = 30.0) -> dict:
        """A control request to ``rec``'s running master; ``NimbusError`` if there is none."""
        m = self.live_master(rec)
        if m is None:
            state = (self.master(rec["name"]) or {}).get("state", "not registered")
            raise Conflict(f"the topology master of {rec['name']!r} is not running ({state}); "
                           f"Nimbus relaunches it, try again shortly")
        return call_master(m["control"], rec["secret"], method, path, body, timeout)

    def master_info(self, rec: dict, route: str, timeout: float = 10.0) -> dict:
        """``GET route`` of ``rec``'s master (``/info/components``, ``/info/brief``, ``/info``).

        A master of an older squall lacks the lighter routes (404): its whole ``/info`` is
        asked instead, a superset of what they answer (errors there keep their texts).
        """
        try:
            return self.control(rec, "GET", route, timeout=timeout)
        except NoControlRoute:
            if route == "/info":
                raise
            log.debug("topology %r: its master has no %s; asking for /info", rec["name"], route)
            return self.control(rec, "GET", "/info", timeout=timeout)

    @staticmethod
    def status_after(rec: dict) -> str:
        """The status once an operation is over: ACTIVE or INACTIVE as the spouts are."""
        return K.ACTIVE if rec.get("active", True) else K.INACTIVE

    # ---- the blob store and its replicas -----------------------------------------------

    def store_version(self, name: str, topology_id: str, version: int, *, code: bytes, topology: bytes,
                      conf: dict) -> Replication:
        """Write a version here, publish its digest, and wait for enough Nimbus nodes to hold it.

        Enough is ``topology.min.replication.count``, the wait is bounded by
        ``topology.max.replication.wait.time.sec`` (see ``squall.nimbus.replication``).
        """
        try:
            min_count, max_wait = replication_settings(conf)
        except ValueError as e:
            raise InvalidRequest(f"topology {name!r}: {e}") from None
        blobs = self.blobs.write(topology_id, version, code=code, topology=topology, conf=conf)
        digest = blobs.digest()
        assert digest is not None
        register_holder(self.store, topology_id, version, self.config.url or "", digest)
        publish(self.store, name, topology_id, version, digest)  # standbys start copying
        rep = wait_for_replication(self.store, topology_id, version, min_count, max_wait, self.require_leader)
        if not rep.achieved:
            log.warning("topology %r: %s", name, rep.message())
        return rep

    def ensure_code(self, rec: dict) -> None:
        """Make sure this Nimbus holds verified copies of the versions ``rec`` runs.

        A leader that took over launches from its own copies: one that is missing or
        corrupt is fetched (and checked) from a Nimbus that holds it, else ``NimbusError``.
        """
        versions = {rec["version"]}
        up = rec.get("upgrade")
        if isinstance(up, dict):
            versions |= {v for v in (up.get("from"), up.get("to")) if isinstance(v, int)}
        for version in sorted(versions):
            try:
                if self.sync is not None:
                    self.sync.ensure(rec["id"], version)
                elif not self.blobs.version(rec["id"], version).exists():
                    raise ReplicationError(f"{rec['id']} v{version} is not in this Nimbus's blob directory")
            except ReplicationError as e:
                raise NimbusError(f"topology {rec['name']!r} cannot be launched here: {e}") from None

    # ---- launching and stopping masters -------------------------------------------------

    def launch(self, rec: dict) -> Launch:
        """Start the master of ``rec``'s epoch; returns at once (see ``wait_started``)."""
        epoch = rec["epoch"]
        started = time.time()
        launch = self.launcher.launch(rec["name"], epoch, rec["spark_master"])
        self.launches[rec["name"]] = launch
        info = {"pid": launch.pid, "host": self.host, "log": str(launch.log_path), "started": started}

        def note(old: dict | None) -> dict | None:
            if old is None or old.get("epoch") != epoch:
                return old
            return {**old, "launcher": info}
        self.store.update(K.topology_key(rec["name"]), note)
        return launch

    def wait_started(self, name: str, launch: Launch, timeout: float) -> dict:
        """Wait until the launch's master runs; on failure stop it and raise ``NimbusError``."""
        deadline = time.monotonic() + timeout
        error = None
        while error is None:
            m = self.master(name)
            if m and m.get("epoch") == launch.epoch:
                if m.get("state") == K.RUNNING:
                    return m
                if m.get("state") == K.FAILED:
                    error = m.get("error") or "its master failed"
                    break
            code = launch.exited()
            if code is not None:
                error = f"its master exited with status {code} before it started ({launch.log_tail()})"
            elif time.monotonic() > deadline:
                error = f"it did not start within {timeout:.0f}s (log: {launch.log_path})"
            else:
                time.sleep(0.2)
        stop_group(launch.pid)
        raise NimbusError(f"topology {name!r} failed to start: {error}")

    def start(self, rec: dict) -> dict:
        """Launch ``rec``'s master and wait for it (``submit_timeout_secs``)."""
        launch = self.launch(rec)
        m = self.wait_started(rec["name"], launch, self.config.submit_timeout_secs)
        self.update(rec["name"], state=K.RUNNING, last_error=None)
        return m

    def stop_master(self, rec: dict, wait_secs: float) -> None:
        """Ask ``rec``'s master to deactivate, wait ``wait_secs`` and stop; then make sure.

        A master that does not answer (dead, hung, still starting) has its process group
        stopped if it was launched on this host; one elsewhere fences itself when it sees
        that its epoch is no longer current.
        """
        name = rec["name"]
        asked = False
        if self.live_master(rec) is not None:
            try:
                self.control(rec, "POST", "/kill", {"wait_secs": wait_secs},
                             timeout=wait_secs + self.config.kill_timeout_secs)
                asked = True
            except NimbusError as e:
                log.warning("topology %r: its master did not stop cleanly: %s", name, e)
        launcher = rec.get("launcher") or {}
        pid = launcher.get("pid")
        if pid and launcher.get("host") == self.host:
            launch = self.launches.get(name)
            if asked:  # it stops its workers and exits by itself: give it the time to
                deadline = time.monotonic() + self.config.kill_timeout_secs
                while time.monotonic() < deadline:
                    exited = launch.exited() if launch is not None and launch.pid == pid else (
                        None if pid_alive(pid) else -1)
                    if exited is not None:
                        break
                    time.sleep(0.2)
            stop_group(pid, grace=5.0)  # whatever is left of the launch: JVM, driver, workers
        self.launches.pop(name, None)
