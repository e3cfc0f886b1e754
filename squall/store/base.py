"""The store's interface: JSON documents under slash-separated keys, and leader election.

Nimbus keeps everything it knows in a store, so that it is stateless (JStorm keeps it in
ZooKeeper): the topology records, the topology masters' registrations and heartbeats, and
which Nimbus leads. Two backends implement the same ``Store`` protocol:

- ``SqliteStore`` (``sqlite:PATH``): one SQLite file, the embedded default; leadership is a
  file lock, so a second Nimbus on the same file waits as a standby.
- ``ZooKeeperStore`` (``zk://host:port[,host:port]/root``): kazoo; leadership is a
  ZooKeeper lock, for several Nimbus processes on several machines.

Keys are like ``topologies/wc``: segments of letters, digits, ``_.-$@``. Values are dicts
that ``json`` can write. Every method may be called from any thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

KEY = re.compile(r"^[A-Za-z0-9_.@$-]+(/[A-Za-z0-9_.@$-]+)*$")

Updater = Callable[[dict | None], dict | None]


class StoreError(RuntimeError):
    """The store cannot be reached or used; the message says which and why."""


def check_key(key: str) -> str:
    """``key`` if it is a valid store key, else ``ValueError``."""
    if not isinstance(key, str) or not KEY.fullmatch(key) or any(p in (".", "..") for p in key.split("/")):
        raise ValueError(f"invalid store key {key!r}")
    return key


class Election(Protocol):
    """A candidacy for leadership among the Nimbus processes of one store."""

    def start(self) -> None:
        """Start contending in the background; returns at once."""
        ...

    def is_leader(self) -> bool:
        """True while this process leads (and its hold on leadership is not in doubt)."""
        ...

    def leader(self) -> dict | None:
        """The ``info`` dict the current leader registered, or None when there is none."""
        ...

    def stop(self) -> None:
        """Give up leadership (if held) and stop contending."""
        ...


class Store(Protocol):
    """JSON documents by key; see the module docstring."""

    def get(self, key: str) -> dict | None:
        """The value at ``key``, or None."""
        ...

    def put(self, key: str, value: dict) -> None:
        """Write ``value`` at ``key`` (creating or replacing it)."""
        ...

    def create(self, key: str, value: dict) -> bool:
        """Write ``value`` at ``key`` only if nothing is there; True if it was written."""
        ...

    def update(self, key: str, fn: Updater) -> dict | None:
        """Atomically replace the value at ``key`` by ``fn(old)`` (None deletes it).

        ``fn`` may be called more than once (optimistic concurrency) and must not have
        side effects; an exception from it aborts the update. Returns the new value.
        """
        ...

    def delete(self, key: str) -> None:
        """Remove ``key`` (nothing happens if it is absent)."""
        ...

    def children(self, prefix: str) -> dict[str, dict]:
        """The values directly under ``prefix``: ``{last segment: value}``."""
        ...

    def election(self, info: dict[str, Any]) -> Election:
        """A new candidacy that registers ``info`` (e.g. the Nimbus URL) while it leads."""
        ...

    def close(self) -> None:
        """Release connections (the process's leadership ends with them)."""
        ...
