"""Where Nimbus keeps its state and the topologies' code (see ``base`` and ``blobs``).

``open_store(uri)`` picks the backend: ``sqlite:PATH`` (or a plain path) for the embedded
SQLite store, ``zk://host:port/root`` for ZooKeeper (needs the ``nimbus-ha`` extra: kazoo);
``auth="user:password"`` makes the ZooKeeper store authenticate (digest) and put an ACL
of that identity on every znode it creates.

>>> import tempfile, os
>>> store = open_store(os.path.join(tempfile.mkdtemp(), "s.sqlite3"))
>>> store.put("topologies/wc", {"status": "ACTIVE"})
>>> store.children("topologies")
{'wc': {'status': 'ACTIVE'}}
>>> store.close()
"""

from __future__ import annotations

from squall.store.base import Election, Store, StoreError, check_key
from squall.store.blobs import BlobStore, VersionBlobs

__all__ = ["BlobStore", "Election", "Store", "StoreError", "VersionBlobs", "check_key", "open_store"]


def open_store(uri: str, auth: str | None = None, **options: float) -> Store:
    """Open the store that ``uri`` names (see the module docstring)."""
    if uri.startswith("zk://"):
        try:
            from squall.store.zookeeper import ZooKeeperStore
        except ImportError as e:
            raise StoreError(f"the ZooKeeper store needs kazoo (pip install 'squall[nimbus-ha]'): {e}") \
                from None
        return ZooKeeperStore(uri, auth=auth, **options)
    if auth:
        raise StoreError("ZooKeeper authentication (--zk-auth) is for zk:// stores only")
    path = uri[len("sqlite:"):] if uri.startswith("sqlite:") else uri
    if not path or "://" in path:
        raise StoreError(f"unknown store {uri!r}: use sqlite:PATH or zk://host:port/root")
    from squall.store.sqlite import SqliteStore

    return SqliteStore(path)
