"""Durable state on one machine: a SQLite database in WAL mode.

Config: ``conf["topology.state.provider.config"] = {"path": dir}``. The directory is
created if missing and holds one database file, ``squall-state.sqlite3``, shared by every
namespace, task and process that uses the directory. Its tables:

- ``committed(ns, key, value)``: the committed key-values of each namespace;
- ``staged(ns, key, value)``: the prepared changes, ``value`` NULL for a deleted key;
- ``txids(ns, committed_txid, prepared_txid)``: each namespace's transaction ids.

Keys and values are ``squall.state.codec`` bytes. A directory made here is 0700 and the
file is made 0600. If another user (not root) could change the database all the same (the
file, its ``-wal`` or ``-shm``, the folder are theirs or writable by group or others, or a
folder above it is writable by others without the sticky bit: ``others_can_write``), it
takes pickles only with ``topology.state.key`` (tagged), never bare ones (``codec.Codec``),
and says why once in the log.
``prepare_commit``, ``commit`` and ``rollback`` are each one SQLite transaction
(``BEGIN IMMEDIATE``), so a crash leaves either all or none of one; ``synchronous=FULL``
makes a returned call durable. Each state object has its own connection; writers of
different namespaces (threads or processes) wait for each other through SQLite's lock, up
to the busy timeout. WAL needs a local file system (not NFS).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from squall.state.base import (
    BufferedKeyValueState,
    Changes,
    KeyValueState,
    Op,
    StateConfigError,
    StateProvider,
    StateUnavailableError,
    _Outcome,
    check_namespace,
    provider_config,
)
from squall.state.codec import DEFAULT, Codec, state_key

DB_FILE = "squall-state.sqlite3"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_SECS = 30.0
_PAGE = 1000  # committed rows fetched per query while iterating
log = logging.getLogger("squall.state")
_warned: set[str] = set()  # reasons already logged, once per process

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS committed (ns TEXT NOT NULL, key BLOB NOT NULL, "
    "value BLOB NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS staged (ns TEXT NOT NULL, key BLOB NOT NULL, value BLOB, "
    "PRIMARY KEY (ns, key)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS txids (ns TEXT PRIMARY KEY, committed_txid INTEGER, "
    "prepared_txid INTEGER)",
)


class LocalKeyValueState(BufferedKeyValueState):
    """A key-value state in a SQLite file (see the module docs)."""

    def __init__(self, namespace: str, db_path: str, busy_timeout: float = BUSY_TIMEOUT_SECS,
                 codec: Codec = DEFAULT) -> None:
        super().__init__(namespace, codec)
        self.db_path = db_path
        self._borrowed = False
        with self._unavailable_as_error():
            # autocommit (isolation_level=None): transactions are the explicit BEGIN IMMEDIATE
            # ones, taking the write lock up front so two writers never deadlock upgrading.
            self._conn = sqlite3.connect(db_path, timeout=busy_timeout, isolation_level=None,
                                         check_same_thread=False)
            try:
                _prepare_db(self._conn, db_path, busy_timeout)
            except sqlite3.DatabaseError as e:
                self._conn.close()
                if isinstance(e, sqlite3.OperationalError):
                    raise
                # a corrupt file is not an outage: retrying cannot help
                raise StateConfigError(f"LocalStateProvider: {db_path} is not a usable state "
                                       f"database: {e}") from e
            except BaseException:
                self._conn.close()
                raise

    def committed_txid(self) -> int | None:
        """See ``KeyValueState.committed_txid``."""
        with self._lock, self._unavailable_as_error():
            return self._txids()[0]

    def prepared_txid(self) -> int | None:
        """See ``KeyValueState.prepared_txid``."""
        with self._lock, self._unavailable_as_error():
            return self._txids()[1]

    def close(self) -> None:
        """Close this state's connection (a sibling leaves it to the state it came from)."""
        with self._lock:
            if not self._borrowed:
                self._conn.close()

    def _sibling(self, namespace: str) -> LocalKeyValueState:
        state = LocalKeyValueState.__new__(LocalKeyValueState)
        BufferedKeyValueState.__init__(state, namespace, self._codec)
        state.db_path = self.db_path
        state._conn = self._conn
        state._lock = self._lock  # one connection, one lock: its transactions never interleave
        state._borrowed = True
        return state

    @classmethod
    def apply_all(cls, ops: Sequence[Op]) -> None:
        """Siblings' prepares, commits and rollbacks in one SQLite transaction (else one each)."""
        first = ops[0][0]
        if any(state._conn is not first._conn for state, _, _ in ops):
            super().apply_all(ops)
            return
        first._apply_batched(ops, first._transaction())

    def txids_all(self, states: list[Any]) -> list[tuple[int | None, int | None]]:
        """The txids of ``states`` (siblings of this one: one query per 500 namespaces)."""
        if any(s._conn is not self._conn for s in states):
            return super().txids_all(states)
        found: dict[str, tuple[int | None, int | None]] = {}
        names = [s.namespace for s in states]
        with self._lock, self._unavailable_as_error():
            for i in range(0, len(names), 500):
                chunk = names[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for ns, committed, prepared in self._conn.execute(
                        f"SELECT ns, committed_txid, prepared_txid FROM txids WHERE ns IN ({marks})",
                        chunk):
                    found[ns] = (committed, prepared)
        return [found.get(ns, (None, None)) for ns in names]

    def _stored_get(self, ekey: bytes) -> bytes | None:
        with self._unavailable_as_error():
            row = self._conn.execute(
                "SELECT 0, value FROM staged WHERE ns = ?1 AND key = ?2 UNION ALL "
                "SELECT 1, value FROM committed WHERE ns = ?1 AND key = ?2 ORDER BY 1 LIMIT 1",
                (self.namespace, ekey)).fetchone()
        return None if row is None else row[1]

    def _stored_items(self) -> Iterator[tuple[bytes, bytes]]:
        with self._lock, self._unavailable_as_error():
            staged = dict(self._conn.execute("SELECT key, value FROM staged WHERE ns = ?",
                                             (self.namespace,)).fetchall())
        after = b""  # below every encoded key: msgpack never encodes to b""
        while True:
            # keyset pages rather than one open cursor: no read transaction is held while the
            # caller works, so the WAL can be checkpointed meanwhile
            with self._lock, self._unavailable_as_error():
                rows = self._conn.execute(
                    "SELECT key, value FROM committed WHERE ns = ? AND key > ? ORDER BY key LIMIT ?",
                    (self.namespace, after, _PAGE)).fetchall()
            for ekey, evalue in rows:
                if ekey not in staged:
                    yield ekey, evalue
            if len(rows) < _PAGE:
                break
            after = rows[-1][0]
        for ekey, maybe in staged.items():
            if maybe is not None:
                yield ekey, maybe

    def _committed_items(self) -> Iterator[tuple[bytes, bytes]]:
        after = b""  # keyset pages, as _stored_items
        while True:
            with self._lock, self._unavailable_as_error():
                rows = self._conn.execute(
                    "SELECT key, value FROM committed WHERE ns = ? AND key > ? ORDER BY key LIMIT ?",
                    (self.namespace, after, _PAGE)).fetchall()
            yield from rows
            if len(rows) < _PAGE:
                break
            after = rows[-1][0]

    def _stage(self, txid: int, changes: Changes) -> None:
        with self._transaction() as c:
            committed, _ = self._txids()
            if committed is not None and txid <= committed:
                raise self._already_committed(txid, committed)
            c.executemany("INSERT OR REPLACE INTO staged (ns, key, value) VALUES (?, ?, ?)",
                          [(self.namespace, k, v) for k, v in changes.items()])
            self._set_txids("prepared_txid = ?", txid)

    def _commit(self, txid: int, changes: Changes | None) -> _Outcome:
        ns = self.namespace
        with self._transaction() as c:
            committed, prepared = self._txids()
            if committed is not None and txid <= committed:
                return _Outcome.NOOP
            if prepared is not None and prepared != txid:
                raise self._other_prepared(txid, prepared)
            if prepared is None and changes is None:
                return _Outcome.LOST
            if changes is not None and prepared is None:
                c.executemany("INSERT OR REPLACE INTO committed (ns, key, value) VALUES (?, ?, ?)",
                              [(ns, k, v) for k, v in changes.items() if v is not None])
                c.executemany("DELETE FROM committed WHERE ns = ? AND key = ?",
                              [(ns, k) for k, v in changes.items() if v is None])
            else:
                c.execute("INSERT OR REPLACE INTO committed (ns, key, value) "
                          "SELECT ns, key, value FROM staged WHERE ns = ? AND value IS NOT NULL", (ns,))
                c.execute("DELETE FROM committed WHERE ns = ?1 AND key IN "
                          "(SELECT key FROM staged WHERE ns = ?1 AND value IS NULL)", (ns,))
                c.execute("DELETE FROM staged WHERE ns = ?", (ns,))
            self._set_txids("committed_txid = ?, prepared_txid = NULL", txid)
        return _Outcome.DIRECT if prepared is None else _Outcome.STAGED

    def _discard_staged(self) -> None:
        with self._transaction() as c:
            c.execute("DELETE FROM staged WHERE ns = ?", (self.namespace,))
            c.execute("UPDATE txids SET prepared_txid = NULL WHERE ns = ?", (self.namespace,))

    def _txids(self) -> tuple[int | None, int | None]:
        row = self._conn.execute("SELECT committed_txid, prepared_txid FROM txids WHERE ns = ?",
                                 (self.namespace,)).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    def _set_txids(self, assignments: str, txid: int) -> None:
        self._conn.execute("INSERT OR IGNORE INTO txids (ns) VALUES (?)", (self.namespace,))
        self._conn.execute(f"UPDATE txids SET {assignments} WHERE ns = ?", (txid, self.namespace))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of the block's statements, or none of them.

        Inside a transaction already open on the shared connection (``apply_all``'s, whose
        lock the caller holds), the block joins it.
        """
        if self._conn.in_transaction:
            yield self._conn
            return
        with self._unavailable_as_error():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back (e.g. on a full disk)
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    @contextmanager
    def _unavailable_as_error(self) -> Iterator[None]:
        # OperationalError is the storage failing (locked past the timeout, I/O error, disk
        # full, unreadable); other DatabaseErrors (a corrupt file) are not transient and pass.
        try:
            yield
        except sqlite3.OperationalError as e:
            raise StateUnavailableError(f"LocalStateProvider: state database {self.db_path} is "
                                        f"unavailable: {e}") from e


def _prepare_db(conn: sqlite3.Connection, db_path: str, busy_timeout: float) -> None:
    """Switch to WAL and create the tables, once per file (every opener checks).

    Several processes may open a new file at the same instant (workers of one host starting
    together). SQLite can answer the journal-mode switch with "locked" at once, without
    waiting for the busy timeout, so a locked or busy answer is retried until the busy
    timeout; any other failure (a read-only, corrupt or unopenable file) is raised at once.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.001
    while True:
        try:
            _switch_and_create(conn, db_path)
            return
        except sqlite3.OperationalError as e:
            if not _is_contention(e) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)  # real time: another process holds the file, not our clock
        pause = min(pause * 2, 0.05)


def _is_contention(e: sqlite3.OperationalError) -> bool:
    """Whether ``e`` is another connection holding the file (worth waiting for)."""
    text = str(e)
    return "locked" in text or "busy" in text


def _switch_and_create(conn: sqlite3.Connection, db_path: str) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StateConfigError(f"LocalStateProvider: {db_path} has state schema version "
                                   f"{version}, newer than this squall's {SCHEMA_VERSION}")
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class LocalStateProvider(StateProvider):
    """Durable state in a SQLite file under ``{"path": dir}`` (see the module docs)."""

    def new_state(self, namespace: str, conf: Mapping[str, Any], context: Any) -> KeyValueState:
        """The state of ``namespace`` in ``<path>/squall-state.sqlite3`` (created if missing)."""
        cfg = provider_config(conf, "LocalStateProvider", {"path": None})
        path = cfg["path"]
        if not path:
            raise StateConfigError('LocalStateProvider needs topology.state.provider.config = '
                                   '{"path": <directory>}; no "path" was given')
        check_namespace(namespace, context)
        path = os.path.abspath(os.path.expanduser(os.fspath(path)))
        db = os.path.join(path, DB_FILE)
        try:
            os.makedirs(path, exist_ok=True, mode=0o700)
            os.close(os.open(db, os.O_RDWR | os.O_CREAT, 0o600))  # SQLite's -wal/-shm take its mode
            shared = others_can_write(db)  # they could plant pickles
        except OSError as e:
            raise StateConfigError(f"LocalStateProvider: cannot create the state directory "
                                   f"{path} (topology.state.provider.config path): {e}") from e
        if shared is not None and shared not in _warned:
            _warned.add(shared)
            log.warning("LocalStateProvider: %s: the state there takes no untagged pickles "
                        "(set topology.state.key for tagged ones)", shared)
        codec = Codec(state_key(conf), trusted=shared is None, where=f"the state file {db}")
        return LocalKeyValueState(namespace, db, codec=codec)


def others_can_write(db: str) -> str | None:
    """Why users other than this one (and root) could change ``db``; None if none can.

    Another user who can write the database, its ``-wal`` or ``-shm``, or the folder that
    holds them (sticky or not: in a sticky folder they could still create the ``-wal``
    before SQLite does), or who can rename a folder on the way to it, could plant untagged
    pickles. Folders above the state folder may be shared if they are sticky (as /tmp).
    """
    me = os.getuid()
    for name in (db, db + "-wal", db + "-shm"):
        try:
            st = os.lstat(name)
        except FileNotFoundError:
            continue
        if st.st_uid not in (me, 0) or st.st_mode & 0o022 or stat.S_ISLNK(st.st_mode):
            return f"{name} is not this user's own file"
    folder = os.path.dirname(os.path.realpath(db))
    st = os.stat(folder)
    if st.st_uid not in (me, 0) or st.st_mode & 0o022:
        return f"others can write the state folder {folder}"
    while folder != os.path.dirname(folder):
        parent = os.path.dirname(folder)
        st = os.stat(parent)
        if st.st_uid not in (me, 0) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            return f"others can rename folders in {parent}"
        folder = parent
    return None
