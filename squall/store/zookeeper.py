"""``ZooKeeperStore``: the store on ZooKeeper through kazoo, for Nimbus HA (see ``base``).

``zk://host:port[,host:port...]/root`` keeps key ``a/b`` at znode ``/root/a/b`` as JSON.
``update`` is a compare-and-set loop on the znode version. Leadership is a kazoo ``Lock``
whose contender nodes carry each candidate's info, so anyone can read who leads.

Authentication (``auth="user:password"``, ``squall nimbus --zk-auth``): the session
authenticates with ZooKeeper's digest scheme and every znode the store creates (records,
the root, the election's lock nodes) gets one ACL entry, all permissions for that
identity and none for anyone else, so that a client without the credential can neither
read the topologies' secrets nor rewrite records. Nodes found under the root when the
store opens (made before, or by someone else) are tightened the same way.

Split brain (RELIABILITY C9): a leader whose connection is in doubt (SUSPENDED) stops
acting as leader at once; if the session is LOST its lock node is gone, and it contends
again once reconnected. ZooKeeper expires a dead leader's session after the session
timeout (``session_timeout`` seconds), and the next contender in line takes over.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, KazooException, NoAuthError, NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry, RetryFailedError
from kazoo.security import make_digest_acl

from squall.store.base import StoreError, Updater, check_key

log = logging.getLogger("squall.store.zookeeper")
T = TypeVar("T")
ELECTION_PATH = "nimbus/election"


def parse_zk_uri(uri: str) -> tuple[str, str]:
    """(hosts, root) of ``zk://h1:p1,h2:p2/root``; the root defaults to ``/squall``.

    >>> parse_zk_uri("zk://127.0.0.1:2181/squall-test")
    ('127.0.0.1:2181', '/squall-test')
    >>> parse_zk_uri("zk://zk1:2181,zk2:2181,zk3:2182/squall")
    ('zk1:2181,zk2:2181,zk3:2182', '/squall')
    """
    parts = urlsplit(uri)
    if parts.scheme != "zk" or not parts.netloc:
        raise StoreError(f"not a ZooKeeper store URI: {uri!r} (expected zk://host:port/root)")
    root = parts.path.rstrip("/") or "/squall"
    return parts.netloc, root


def parse_auth(value: str) -> tuple[str, str]:
    """(user, password) of ``user:password``; ``ValueError`` (without the password) if not one.

    >>> parse_auth("squall:pw:with:colons")
    ('squall', 'pw:with:colons')
    """
    user, sep, password = value.strip().partition(":")
    if not sep or not user or not password:
        raise ValueError("ZooKeeper auth must be USER:PASSWORD (digest scheme)")
    return user, password


def read_auth(option: str) -> str:
    """The credential an option gives: ``user:password`` itself, or ``@FILE`` holding it."""
    if option.startswith("@"):
        try:
            option = open(option[1:]).read().strip()  # noqa: SIM115 - a short read
        except OSError as e:
            raise ValueError(f"cannot read the ZooKeeper credential file {option[1:]}: {e.strerror}") \
                from None
    parse_auth(option)
    return option


class ZooKeeperStore:
    """The ``Store`` protocol on ZooKeeper."""

    def __init__(self, uri: str, session_timeout: float = 6.0, connect_timeout: float = 10.0,
                 auth: str | None = None) -> None:
        self.uri = uri
        hosts, self.root = parse_zk_uri(uri)
        options: dict[str, Any] = {}
        self.acl = None
        if auth:
            try:
                user, password = parse_auth(auth)
            except ValueError as e:
                raise StoreError(str(e)) from None
            self.acl = [make_digest_acl(user, password, all=True)]
            options.update(auth_data=[("digest", f"{user}:{password}")], default_acl=self.acl)
        self.client = KazooClient(hosts=hosts, timeout=session_timeout,
                                  connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=1.0),
                                  **options)
        try:
            self.client.start(timeout=connect_timeout)
        except Exception as e:  # noqa: BLE001 - kazoo raises its own timeout types
            self.client.close()
            raise StoreError(f"cannot reach ZooKeeper at {hosts} within {connect_timeout:.0f}s: "
                             f"{type(e).__name__}") from None
        self._retry = KazooRetry(max_tries=8, delay=0.1, max_delay=1.0, ignore_expire=False)
        # kazoo queues a request made while it reconnects and waits for the connection without
        # end: with no quorum (two of three members down) every caller, a health check or a
        # shutdown included, would hang. A request waits for the connection this long at most.
        self.wait_secs = max(1.0, float(session_timeout))
        self._connected = threading.Event()
        self._connected.set()
        self.client.add_listener(self._on_state)
        self._call(self.client.ensure_path, self.root)
        if self.acl is not None:
            self._tighten(self.root)

    def _on_state(self, state: str) -> None:
        # kazoo's event thread: a flag only
        if state == KazooState.CONNECTED:
            self._connected.set()
        else:
            self._connected.clear()

    def connected(self) -> bool:
        """Whether the session's connection is up now (not suspended or lost)."""
        return self._connected.is_set() and self.client.state == KazooState.CONNECTED

    def _tighten(self, path: str) -> None:
        """Put the store's ACL on ``path`` and every node under it that lacks it."""
        try:
            acls, _ = self._call(self.client.get_acls, path)
            if list(acls) != self.acl:
                self._call(self.client.set_acls, path, self.acl)
                log.info("ZooKeeper node %s: ACL restricted to the store's identity", path)
            children = self._call(self.client.get_children, path)
        except NoNodeError:
            return
        for child in children:
            self._tighten(f"{path}/{child}")

    def _path(self, key: str) -> str:
        return f"{self.root}/{check_key(key)}"

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def attempt(*a: Any, **kw: Any) -> T:
            if not self._connected.wait(self.wait_secs):
                raise StoreError(f"ZooKeeper store {self.uri}: not connected for {self.wait_secs:.0f}s "
                                 f"(is a quorum of the ensemble up?)")
            return fn(*a, **kw)
        try:
            return self._retry.copy()(attempt, *args, **kwargs)
        except (RetryFailedError, KazooException) as e:
            if isinstance(e, NoAuthError):
                raise StoreError(f"ZooKeeper store {self.uri}: not allowed (its ACL refuses this "
                                 f"client: a missing or wrong --zk-auth credential)") from None
            if isinstance(e, (NoNodeError, NodeExistsError, BadVersionError)):
                raise
            raise StoreError(f"ZooKeeper store {self.uri}: {type(e).__name__}: {e}") from None

    def get(self, key: str) -> dict | None:
        """See ``Store.get``."""
        try:
            data, _ = self._call(self.client.get, self._path(key))
        except NoNodeError:
            return None
        return json.loads(data) if data else None

    def put(self, key: str, value: dict) -> None:
        """See ``Store.put``."""
        self.update(key, lambda _old: value)

    def create(self, key: str, value: dict) -> bool:
        """See ``Store.create``."""
        try:
            self._call(self.client.create, self._path(key), json.dumps(value).encode(), makepath=True)
        except NodeExistsError:
            return False
        return True

    def update(self, key: str, fn: Updater) -> dict | None:
        """See ``Store.update``: compare-and-set on the znode's version until it holds."""
        path = self._path(key)
        while True:
            try:
                data, stat = self._call(self.client.get, path)
            except NoNodeError:
                new = fn(None)
                if new is None:
                    return None
                try:
                    self._call(self.client.create, path, json.dumps(new).encode(), makepath=True)
                    return new
                except NodeExistsError:
                    continue
            new = fn(json.loads(data) if data else None)
            try:
                if new is None:
                    self._call(self.client.delete, path, version=stat.version)
                else:
                    self._call(self.client.set, path, json.dumps(new).encode(), version=stat.version)
                return new
            except (BadVersionError, NoNodeError):
                continue  # someone wrote in between: read again

    def delete(self, key: str) -> None:
        """See ``Store.delete`` (children go too)."""
        try:
            self._call(self.client.delete, self._path(key), recursive=True)
        except NoNodeError:
            pass

    def children(self, prefix: str) -> dict[str, dict]:
        """See ``Store.children``."""
        try:
            names = self._call(self.client.get_children, self._path(prefix))
        except NoNodeError:
            return {}
        out = {}
        for name in names:
            value = self.get(f"{prefix}/{name}")
            if value is not None:
                out[name] = value
        return out

    def election(self, info: dict[str, Any]) -> ZooKeeperElection:
        """See ``Store.election``."""
        return ZooKeeperElection(self, info)

    def close(self) -> None:
        """End the session (its ephemeral nodes, the election's too, go with it)."""
        try:
            self.client.stop()
        finally:
            self.client.close()


class ZooKeeperElection:
    """Leadership as a kazoo ``Lock`` (see the module docstring)."""

    def __init__(self, store: ZooKeeperStore, info: dict[str, Any]) -> None:
        self.store = store
        self.info = dict(info)
        self.path = f"{store.root}/{ELECTION_PATH}"
        self._holding = False
        self._suspended = False
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._lock: Any = None
        self._thread = threading.Thread(target=self._run, name="squall-election", daemon=True)
        store.client.add_listener(self._on_state)

    def _on_state(self, state: str) -> None:
        # runs on kazoo's event thread: only flags here, never a blocking call
        if state == KazooState.SUSPENDED:
            self._suspended = True
        elif state == KazooState.LOST:
            self._suspended = True
            self._lost.set()
        else:
            self._suspended = False

    def start(self) -> None:
        """See ``Election.start``."""
        self._thread.start()

    def _run(self) -> None:
        client = self.store.client
        while not self._stop.is_set():
            if client.state != KazooState.CONNECTED:
                self._stop.wait(0.2)
                continue
            self._lost.clear()
            self._lock = client.Lock(self.path, json.dumps(self.info))
            try:
                got = self._lock.acquire(blocking=True)
            except Exception as e:  # noqa: BLE001 - connection trouble: contend again
                log.warning("Nimbus election: %s: %s; contending again", type(e).__name__, e)
                self._stop.wait(0.5)
                continue
            if not got:
                continue
            self._holding = True
            log.info("this Nimbus leads (%s)", self.info.get("url"))
            while not self._stop.is_set() and not self._lost.is_set():
                self._stop.wait(0.2)
            self._holding = False
            if self._lost.is_set():
                log.warning("Nimbus lost its ZooKeeper session: no longer the leader")
            self._release()

    def _release(self) -> None:
        try:
            # without a connection kazoo's release would wait for one; the node goes with the session
            if self._lock is not None and self.store.connected():
                self._lock.release()
        except Exception:  # noqa: BLE001 - the node may be gone with the session
            pass

    def is_leader(self) -> bool:
        """See ``Election.is_leader``: holding the lock with the session not in doubt."""
        return self._holding and not self._suspended

    def leader(self) -> dict | None:
        """See ``Election.leader``: the info of the first contender in line."""
        if self.is_leader():
            return self.info
        if self._suspended or not self.store.connected():
            return None  # the connection is in doubt: who leads is not known here
        try:
            lock = self._lock or self.store.client.Lock(self.path)
            contenders = self.store._call(lock.contenders)
        except (StoreError, KazooException):
            return None
        for c in contenders:
            try:
                return json.loads(c)
            except ValueError:
                continue
        return None

    def stop(self) -> None:
        """See ``Election.stop``."""
        self._stop.set()
        if self._lock is not None:
            self._lock.cancel()
        self._thread.join(5.0)
        self._release()
