"""Code replication between Nimbus nodes: Storm's blob store synchronisation.

Every Nimbus keeps each topology version's files (``code.zip``, ``topology.pkl``,
``conf.json``) in its own blob directory: no shared mount. The store says who holds what:

- ``blobstore/<topology id>-v<N>``: the version's content ``digest`` (``blobs.digest_of``),
  written by the leader when it stores the version (Storm's blob key);
- ``blobstore/<topology id>-v<N>/<node>``: one per Nimbus that holds a copy it checked
  against that digest (``node``: its ``host@port``; Storm's ``/blobstore/<key>/<host:port>``).

A submit (or an upgrade's new version) returns once ``topology.min.replication.count``
Nimbus nodes hold the code, or once ``topology.max.replication.wait.time.sec`` has passed
(Storm's ``waitForDesiredCodeReplication``: a value > 0 bounds the wait, any other waits
for ever; the submit then goes on, and its reply and the log say how many nodes hold it).

``CodeSync`` runs on every Nimbus (Storm's ``blobSync``): it looks at the store's blob keys
every second (Storm watches them in ZooKeeper) and fetches what it lacks from a Nimbus that
holds it, over the authenticated Nimbus API (``GET /api/v1/blobs/...`` needs the token);
every copy is checked against the digest before it takes its place, and a corrupt one is
refused. Every ``nimbus.code.sync.freq.secs`` it also checks its own copies again: a copy
that no longer matches (a bad disk, a hand edit) is dropped, unregistered and fetched
again. Copies of topologies no longer in the store are deleted.
"""

from __future__ import annotations

import logging
import re
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from squall.runtime import clock
from squall.store import BlobStore, Store, StoreError
from squall.store import keys as K
from squall.store.blobs import FILES, CorruptBlob

log = logging.getLogger("squall.nimbus.replication")

BLOBSTORE = "blobstore"
MIN_REPLICATION = "topology.min.replication.count"
MAX_REPLICATION_WAIT = "topology.max.replication.wait.time.sec"
DEFAULT_MIN_REPLICATION = 1  # Storm's defaults.yaml
DEFAULT_MAX_REPLICATION_WAIT = 60
DEAD_AFTER_SECS = 60.0  # a copy of a topology not in the store is deleted once this old
BLOB_KEY = re.compile(r"(?P<id>.+)-v(?P<version>[0-9]{1,9})")

Fetcher = Callable[[str, str, int, str], bytes]  # (Nimbus url, topology id, version, file) -> bytes


class ReplicationError(RuntimeError):
    """No verified copy of a version could be had; the message says which and why."""


def blob_key(topology_id: str, version: int) -> str:
    """The store key of one version's replication record.

    >>> blob_key("wc-1700000000-a1b2c3", 2)
    'blobstore/wc-1700000000-a1b2c3-v2'
    """
    return f"{BLOBSTORE}/{K.check_topology_id(topology_id)}-v{int(version)}"


def parse_blob_key(last: str) -> tuple[str, int] | None:
    """(topology id, version) of a key's last segment, or None if it is not one."""
    m = BLOB_KEY.fullmatch(last)
    if m is None:
        return None
    try:
        return K.check_topology_id(m["id"]), int(m["version"])
    except ValueError:
        return None


def node_id(url: str) -> str:
    """How a Nimbus is named among the holders: ``host@port`` of its URL.

    >>> node_id("http://127.0.0.2:6627")
    '127.0.0.2@6627'
    """
    parts = urlsplit(url)
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", parts.hostname or "nimbus")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{host}@{port}"


def replication_settings(conf: dict) -> tuple[int, float]:
    """(min count, max wait secs) from a topology's configuration; ``ValueError`` names a bad key."""
    count = conf.get(MIN_REPLICATION, DEFAULT_MIN_REPLICATION)
    wait = conf.get(MAX_REPLICATION_WAIT, DEFAULT_MAX_REPLICATION_WAIT)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"{MIN_REPLICATION} must be an integer >= 1, got {count!r}")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)):
        raise ValueError(f"{MAX_REPLICATION_WAIT} must be a number of seconds (-1: for ever), got {wait!r}")
    return count, float(wait)


# ---- the registry in the store ----------------------------------------------------------

def publish(store: Store, name: str, topology_id: str, version: int, digest: str) -> None:
    """Record a new version's digest (the leader, when it stores the version)."""
    store.put(blob_key(topology_id, version), {"name": name, "topology_id": topology_id,
                                               "version": version, "digest": digest,
                                               "created": time.time()})


def register_holder(store: Store, topology_id: str, version: int, url: str, digest: str) -> None:
    """Say that the Nimbus at ``url`` holds a verified copy of the version."""
    store.put(f"{blob_key(topology_id, version)}/{node_id(url)}",
              {"url": url, "digest": digest, "since": time.time()})


def unregister_holder(store: Store, topology_id: str, version: int, url: str) -> None:
    """Withdraw ``url``'s claim (its copy is gone or corrupt)."""
    store.delete(f"{blob_key(topology_id, version)}/{node_id(url)}")


def holders(store: Store, topology_id: str, version: int) -> dict[str, str]:
    """``{node: url}`` of the Nimbus nodes whose copy matches the version's digest."""
    key = blob_key(topology_id, version)
    meta = store.get(key)
    if meta is None:
        return {}
    return {node: h["url"] for node, h in store.children(key).items() if isinstance(h, dict)
            and h.get("digest") == meta.get("digest") and isinstance(h.get("url"), str)}


def forget(store: Store, topology_id: str) -> None:
    """Remove every replication record of ``topology_id`` (it was killed)."""
    prefix = f"{K.check_topology_id(topology_id)}-v"
    for last in store.children(BLOBSTORE):
        if last.startswith(prefix):
            key = f"{BLOBSTORE}/{last}"
            for node in store.children(key):
                store.delete(f"{key}/{node}")
            store.delete(key)


@dataclass
class Replication:
    """How many Nimbus nodes hold a version: what a submit reports."""

    required: int
    count: int
    holders: list[str] = field(default_factory=list)
    waited_secs: float = 0.0
    max_wait_secs: float = 0.0

    @property
    def achieved(self) -> bool:
        """True once ``required`` nodes hold the version."""
        return self.count >= self.required

    def message(self) -> str:
        """One line for the reply and the log."""
        if self.achieved:
            return (f"code held by {self.count} Nimbus node(s) (topology.min.replication.count "
                    f"{self.required})")
        return (f"code held by {self.count} of the {self.required} Nimbus nodes wanted "
                f"(topology.min.replication.count) after waiting {self.waited_secs:.0f}s "
                f"(topology.max.replication.wait.time.sec {self.max_wait_secs:g}); going on with "
                f"{self.count}")

    def as_dict(self) -> dict[str, Any]:
        """The ``replication`` field of a submit's reply."""
        return {"required": self.required, "count": self.count, "holders": self.holders,
                "achieved": self.achieved, "waited_secs": round(self.waited_secs, 1),
                "message": self.message()}


def wait_for_replication(store: Store, topology_id: str, version: int, min_count: int,
                         max_wait: float, still_leader: Callable[[], None],
                         poll_secs: float = 1.0) -> Replication:
    """Storm's ``waitForDesiredCodeReplication``: wait until ``min_count`` nodes hold the version.

    ``max_wait`` > 0 bounds the wait (then it returns what there is); 0 or less waits for
    ever. ``still_leader`` raises if this Nimbus stopped leading (Storm's ``assertIsLeader``).
    Runs on the runtime's clock (simulated in tests).
    """
    start = clock.monotonic()
    while True:
        found = holders(store, topology_id, version)
        waited = clock.monotonic() - start
        rep = Replication(min_count, len(found), sorted(found.values()), waited, max_wait)
        if rep.achieved:
            log.info("%s v%d: desired replication count %d achieved (%d)", topology_id, version,
                     min_count, rep.count)
            return rep
        if max_wait > 0 and waited >= max_wait:
            log.warning("%s v%d: %s", topology_id, version, rep.message())
            return rep
        still_leader()
        log.info("%s v%d: waiting for code replication: %d of %d Nimbus nodes hold it (%.0fs of %s)",
                 topology_id, version, rep.count, min_count, waited,
                 f"{max_wait:g}s" if max_wait > 0 else "for ever")
        clock.sleep(poll_secs)


# ---- copying between Nimbus nodes --------------------------------------------------------

def http_fetcher(token: str, cafile: str | None = None, timeout: float = 60.0) -> Fetcher:
    """Fetch one file of a version from a Nimbus's API with the token (Bearer)."""
    context = ssl.create_default_context(cafile=cafile) if cafile else None

    def fetch(url: str, topology_id: str, version: int, name: str) -> bytes:
        req = urllib.request.Request(f"{url.rstrip('/')}/api/v1/blobs/{topology_id}/{version}/{name}",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            return resp.read()
    return fetch


def fetch_version(blobs: BlobStore, fetcher: Fetcher, sources: list[str], topology_id: str,
                  version: int, digest: str) -> str:
    """Copy a version from the first of ``sources`` that gives a copy matching ``digest``.

    A copy that does not match is refused (logged) and the next source is tried. Returns
    the URL copied from; ``ReplicationError`` if none gave a good copy.
    """
    problems = []
    for url in sources:
        try:
            files = {name: fetcher(url, topology_id, version, name) for name in FILES}
        except (OSError, urllib.error.URLError) as e:
            problems.append(f"{url}: {getattr(e, 'reason', None) or e}")
            continue
        try:
            blobs.write_files(topology_id, version, files, expected=digest)
        except CorruptBlob as e:
            log.error("refused a corrupt copy of %s v%d from %s: %s", topology_id, version, url, e)
            problems.append(f"{url}: corrupt copy refused")
            continue
        except FileExistsError:
            pass  # written meanwhile (by another round): checked below by the caller
        return url
    raise ReplicationError(f"no Nimbus gave a good copy of {topology_id} v{version}: "
                           f"{'; '.join(problems) or 'no Nimbus holds it'}")


class CodeSync:
    """Keeps this Nimbus's blob directory a verified copy of every version in the store."""

    def __init__(self, store: Store, blobs: BlobStore, url: str, fetcher: Fetcher, *,
                 freq_secs: float = 120.0, leader_url: Callable[[], str | None] = lambda: None,
                 poll_secs: float = 1.0) -> None:
        self.store = store
        self.blobs = blobs
        self.url = url
        self.node = node_id(url)
        self.fetcher = fetcher
        self.freq_secs = freq_secs
        self.leader_url = leader_url
        self.poll_secs = poll_secs
        self._lock = threading.Lock()  # one round at a time (the thread, or a leader's ensure)
        self._keys: set[str] | None = None
        self._failed: dict[str, str] = {}  # blob key -> the last failure logged
        self._last_full = float("-inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="squall-code-sync", daemon=True)

    def start(self) -> None:
        """Sync in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop syncing."""
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                keys = set(self.store.children(BLOBSTORE))
                full = time.monotonic() - self._last_full >= self.freq_secs
                if full or keys != self._keys:
                    # a round that could not copy everything is tried again at the next poll
                    self._keys = keys if self.sync(full=full) else None
            except StoreError as e:
                log.warning("code sync: the store is unavailable: %s", e)
            except Exception:  # noqa: BLE001 - the sync must outlive one bad round
                log.exception("code sync: a round failed")
            self._stop.wait(self.poll_secs)

    def sync(self, full: bool = False) -> bool:
        """One round: fetch what is missing, check (``full``: every copy), delete the dead.

        True if this Nimbus now holds a checked copy of every version in the store.
        """
        complete = True
        with self._lock:
            if full:
                self._last_full = time.monotonic()
            records = self.store.children(K.TOPOLOGIES)
            live = {r.get("id") for r in records.values() if isinstance(r, dict)}
            registry = self.store.children(BLOBSTORE)
            for last, meta in registry.items():
                parsed = parse_blob_key(last)
                if parsed is None or not isinstance(meta, dict) or parsed[0] not in live:
                    continue
                try:
                    self._one(parsed[0], parsed[1], str(meta.get("digest")), full)
                except ReplicationError as e:
                    complete = False
                    if self._failed.get(last) != str(e):  # once per cause, not once a second
                        log.warning("code sync: %s; trying again", e)
                    self._failed[last] = str(e)
                else:
                    self._failed.pop(last, None)
            self._delete_dead(live, registry)
            return complete

    def _one(self, topology_id: str, version: int, digest: str, full: bool) -> None:
        key = blob_key(topology_id, version)
        claims = self.store.children(key)
        mine = claims.get(self.node)
        local = self.blobs.version(topology_id, version)
        if local.exists():
            if mine and mine.get("digest") == digest and not full:
                return
            try:
                local.verify(digest)
            except CorruptBlob as e:
                log.error("code sync: my copy of %s v%d is corrupt (%s); dropping it and fetching it again",
                          topology_id, version, e)
                if mine:
                    unregister_holder(self.store, topology_id, version, self.url)
                self.blobs.remove_version(topology_id, version)
            else:
                if not mine or mine.get("digest") != digest:
                    register_holder(self.store, topology_id, version, self.url, digest)
                return
        elif mine:
            unregister_holder(self.store, topology_id, version, self.url)
        self.fetch(topology_id, version, digest, claims)

    def fetch(self, topology_id: str, version: int, digest: str, claims: dict | None = None) -> str:
        """Copy the version from a holder (the leader first), check it, register it here."""
        if claims is None:
            claims = self.store.children(blob_key(topology_id, version))
        urls = [c["url"] for n, c in claims.items() if n != self.node and isinstance(c, dict)
                and c.get("digest") == digest and isinstance(c.get("url"), str)]
        leader = self.leader_url()
        urls.sort(key=lambda u: u != leader)  # the leader first, as it surely holds it
        source = fetch_version(self.blobs, self.fetcher, urls, topology_id, version, digest)
        self.blobs.version(topology_id, version).verify(digest)
        register_holder(self.store, topology_id, version, self.url, digest)
        log.info("code sync: copied %s v%d from %s (digest checked)", topology_id, version, source)
        return source

    def ensure(self, topology_id: str, version: int) -> None:
        """Make sure this Nimbus holds a verified copy of the version (before it launches it).

        ``ReplicationError`` if it has none and none can be fetched. A version with no
        replication record (stored before replication existed) needs only to be there.
        """
        with self._lock:
            meta = self.store.get(blob_key(topology_id, version))
            local = self.blobs.version(topology_id, version)
            if meta is None:
                if not local.exists():
                    raise ReplicationError(f"{topology_id} v{version} is not in this Nimbus's blob "
                                           f"directory and the store has no record of who holds it")
                return
            self._one(topology_id, version, str(meta.get("digest")), full=True)

    def _delete_dead(self, live: set, registry: dict) -> None:
        """Delete local copies of topologies no longer in the store (Storm deletes them too).

        A directory younger than ``DEAD_AFTER_SECS`` is left alone: a leader stores a new
        topology's files before it publishes them, and this round may have read the store
        just before the record appeared.
        """
        known = {p[0] for p in map(parse_blob_key, registry) if p is not None}
        dead = [t for t in self.blobs.topology_ids() if t not in live and t not in known]
        if not dead:
            return
        live = {r.get("id") for r in self.store.children(K.TOPOLOGIES).values() if isinstance(r, dict)}
        for topology_id in dead:
            try:
                age = time.time() - (self.blobs.root / topology_id).stat().st_mtime
            except OSError:
                continue
            if topology_id not in live and age > DEAD_AFTER_SECS:
                log.info("code sync: %s is no longer in the store; deleting my copy", topology_id)
                self.blobs.remove(topology_id)
