"""The default state provider: state kept in this process's memory.

The store is process-wide and keyed by namespace, so a topology killed and submitted again
in the same process under the same name finds its committed state, as a ``LocalCluster``
user expects. Nothing survives the process. Tests that reuse a topology name in one process
call ``clear()`` between runs.

>>> state = InMemoryStateProvider().new_state("doctest-counts", {}, None)
>>> state.put("apple", 1)
>>> state.commit(1)
>>> InMemoryStateProvider().new_state("doctest-counts", {}, None).get("apple")
1
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from squall.state.base import (
    BufferedKeyValueState,
    Changes,
    KeyValueState,
    Op,
    StateProvider,
    _Outcome,
    _staged_gone,
    check_namespace,
)


@dataclass
class _Stored:
    """One namespace's staged and committed layers; guarded by ``lock``."""

    committed: dict[bytes, bytes] = field(default_factory=dict)
    staged: Changes = field(default_factory=dict)
    committed_txid: int | None = None
    prepared_txid: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_store: dict[str, _Stored] = {}
_store_lock = threading.Lock()


def clear() -> None:
    """Forget every namespace's state in this process (state objects in use keep theirs)."""
    with _store_lock:
        _store.clear()


def _stored(namespace: str) -> _Stored:
    with _store_lock:
        return _store.setdefault(namespace, _Stored())


class InMemoryKeyValueState(BufferedKeyValueState):
    """A key-value state in this process's memory (see the module docs)."""

    def __init__(self, namespace: str, stored: _Stored) -> None:
        super().__init__(namespace)
        self._stored = stored

    def committed_txid(self) -> int | None:
        """See ``KeyValueState.committed_txid``."""
        with self._stored.lock:
            return self._stored.committed_txid

    def prepared_txid(self) -> int | None:
        """See ``KeyValueState.prepared_txid``."""
        with self._stored.lock:
            return self._stored.prepared_txid

    def _sibling(self, namespace: str) -> InMemoryKeyValueState:
        state = InMemoryKeyValueState(namespace, _stored(namespace))
        state._lock = self._lock  # one lock: ``apply_all`` takes it once for every sibling
        return state

    @classmethod
    def apply_all(cls, ops: Sequence[Op]) -> None:
        """Siblings' prepares, commits and rollbacks under their one lock (else one call each).

        A commit of a transaction a state staged itself that is gone stops the batch before
        anything is applied, as SQLite's and Redis's one transaction does.
        """
        first = ops[0][0]
        if any(state._lock is not first._lock for state, _, _ in ops):
            super().apply_all(ops)
            return
        with first._lock:
            for state, op, txid in ops:
                stored = state._stored
                if op == "commit" and state._to_commit(txid) is None and _staged_gone(
                        stored.committed_txid, stored.prepared_txid, txid):  # type: ignore[arg-type]
                    raise state._lost(txid)
            first._apply_batched(ops, nullcontext())

    def _stored_get(self, ekey: bytes) -> bytes | None:
        s = self._stored
        with s.lock:
            return s.staged[ekey] if ekey in s.staged else s.committed.get(ekey)

    def _stored_items(self) -> Iterator[tuple[bytes, bytes]]:
        s = self._stored
        with s.lock:  # a snapshot, so the caller may change the state while iterating
            view = dict(s.committed)
            _apply(view, s.staged)
        return iter(view.items())

    def _committed_items(self) -> Iterator[tuple[bytes, bytes]]:
        s = self._stored
        with s.lock:
            return iter(dict(s.committed).items())

    def _stage(self, txid: int, changes: Changes) -> None:
        s = self._stored
        with s.lock:
            if s.committed_txid is not None and txid <= s.committed_txid:
                raise self._already_committed(txid, s.committed_txid)
            s.staged.update(changes)
            s.prepared_txid = txid

    def _commit(self, txid: int, changes: Changes | None) -> _Outcome:
        s = self._stored
        with s.lock:
            if s.committed_txid is not None and txid <= s.committed_txid:
                return _Outcome.NOOP
            if s.prepared_txid is not None and s.prepared_txid != txid:
                raise self._other_prepared(txid, s.prepared_txid)
            if s.prepared_txid is not None:
                outcome, applied = _Outcome.STAGED, s.staged
            elif changes is not None:
                outcome, applied = _Outcome.DIRECT, changes
            else:
                return _Outcome.LOST
            _apply(s.committed, applied)
            s.staged = {}
            s.prepared_txid = None
            s.committed_txid = txid
            return outcome

    def _discard_staged(self) -> None:
        s = self._stored
        with s.lock:
            s.staged = {}
            s.prepared_txid = None


def _apply(target: dict[bytes, bytes], changes: Changes) -> None:
    for ekey, evalue in changes.items():
        if evalue is None:
            target.pop(ekey, None)
        else:
            target[ekey] = evalue


class InMemoryStateProvider(StateProvider):
    """Process-wide in-memory state (Storm's ``InMemoryKeyValueStateProvider``); no config."""

    def new_state(self, namespace: str, conf: Mapping[str, Any], context: Any) -> KeyValueState:
        """The state of ``namespace`` in this process (created empty the first time)."""
        check_namespace(namespace, context)
        return InMemoryKeyValueState(namespace, _stored(namespace))
