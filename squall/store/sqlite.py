"""``SqliteStore``: the embedded store, one SQLite file in WAL mode (see ``base``).

Nimbus and the topology masters it launches (processes on the same machine) share the
file; SQLite's lock serialises their writes, and ``update`` is one ``BEGIN IMMEDIATE``
transaction, so a read-modify-write is atomic across processes. WAL needs a local file
system. Leadership is an exclusive ``flock`` on ``PATH.leader``: the kernel releases it when
the holder dies, however it dies, so a standby Nimbus on the same file takes over at once.

The store holds the topologies' secrets: its files (``PATH``, ``-wal``, ``-shm``,
``.leader``) are made or tightened to mode 0600, and a directory made for it is 0700.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from squall.store.base import StoreError, Updater, check_key

BUSY_TIMEOUT_SECS = 30.0
LEADER_KEY = "nimbus/leader"
RETRY_SECS = 0.5


def private_files(path: Path) -> None:
    """Tighten the store file and its companions to mode 0600 (whatever they were)."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}.leader")):
        try:
            if p.stat().st_mode & 0o077:
                os.chmod(p, 0o600)
        except FileNotFoundError:
            pass


class SqliteStore:
    """The ``Store`` protocol on a SQLite file."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # made 0600 before SQLite opens it: its -wal and -shm files take the file's mode
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            private_files(self.path)
            self._conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_SECS,
                                         isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, "
                               "value TEXT NOT NULL)")
            private_files(self.path)
        except (sqlite3.Error, OSError) as e:
            raise StoreError(f"cannot open the store {self.path}: {e}") from None
        self._lock = threading.Lock()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as e:
                raise StoreError(f"store {self.path}: {e}") from None

    def get(self, key: str) -> dict | None:
        """See ``Store.get``."""
        check_key(key)
        with self._lock:
            try:
                row = self._conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as e:
                raise StoreError(f"store {self.path}: {e}") from None
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict) -> None:
        """See ``Store.put``."""
        data = json.dumps(value)
        with self._tx() as c:
            c.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (check_key(key), data))

    def create(self, key: str, value: dict) -> bool:
        """See ``Store.create``."""
        data = json.dumps(value)
        with self._tx() as c:
            cur = c.execute("INSERT OR IGNORE INTO kv (key, value) VALUES (?, ?)", (check_key(key), data))
            return cur.rowcount == 1

    def update(self, key: str, fn: Updater) -> dict | None:
        """See ``Store.update``."""
        check_key(key)
        with self._tx() as c:
            row = c.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
            new = fn(json.loads(row[0]) if row else None)
            if new is None:
                c.execute("DELETE FROM kv WHERE key = ?", (key,))
            else:
                c.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, json.dumps(new)))
            return new

    def delete(self, key: str) -> None:
        """See ``Store.delete``."""
        with self._tx() as c:
            c.execute("DELETE FROM kv WHERE key = ?", (check_key(key),))

    def children(self, prefix: str) -> dict[str, dict]:
        """See ``Store.children``."""
        check_key(prefix)
        with self._lock:
            try:
                rows = self._conn.execute(
                    "SELECT key, value FROM kv WHERE key > ? AND key < ?",
                    (prefix + "/", prefix + "0"),  # '0' follows '/' in ASCII: the prefix's range
                ).fetchall()
            except sqlite3.Error as e:
                raise StoreError(f"store {self.path}: {e}") from None
        out = {}
        for key, value in rows:
            rest = key[len(prefix) + 1:]
            if "/" not in rest:
                out[rest] = json.loads(value)
        return out

    def election(self, info: dict[str, Any]) -> FileLockElection:
        """See ``Store.election``: an exclusive lock on ``PATH.leader``."""
        return FileLockElection(self, Path(f"{self.path}.leader"), info)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


class FileLockElection:
    """Leadership as an exclusive ``flock``; the holder writes ``nimbus/leader``."""

    def __init__(self, store: SqliteStore, lock_path: Path, info: dict[str, Any]) -> None:
        self.store = store
        self.lock_path = lock_path
        self.info = dict(info)
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="squall-election", daemon=True)

    def start(self) -> None:
        """See ``Election.start``."""
        self._thread.start()

    def _try_lock(self) -> bool:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._try_lock():
                self.store.put(LEADER_KEY, self.info)
                return
            self._stop.wait(RETRY_SECS)

    def is_leader(self) -> bool:
        """See ``Election.is_leader``."""
        return self._fd is not None

    def leader(self) -> dict | None:
        """See ``Election.leader``."""
        if self._fd is not None:
            return self.info
        return self.store.get(LEADER_KEY)

    def stop(self) -> None:
        """See ``Election.stop``."""
        self._stop.set()
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
