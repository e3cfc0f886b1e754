"""Keyed state by key group: one provider state per key group a task owns.

A ``KeyGroupedState`` is the ``KeyValueState`` a stateful task of a fields-grouped component
gets. A key's key group is ``key_group(key, K)`` (``squall.runtime.keygroups``, the fields
grouping's own); each owned key group ``g`` is the provider namespace ``<prefix>/kg/<g>``
(``prefix`` is ``topology/component``), opened when first used. A key whose key group the
task does not own (a per-task total kept next to the grouped keys) is the task's own: it
lives in ``<prefix>/kg/task-<index>``, which stays with the task index across rescales.

**Transactions.** ``prepare_commit``, ``commit`` and ``rollback`` touch only the key groups
changed since the last transaction (and those staged), never every owned one. The task's
txids and the key groups its staged transaction covers are kept in a record,
``<prefix>/$kg/task-<index>@g<generation>`` (``$``: no data, as ``$tasks``), written with
every prepare, commit and rollback (before the key groups are staged, after they are
committed), so ``committed_txid`` and
``prepared_txid`` say what is stored and a COMMIT replayed after a crash, or a rollback,
settles every key group the staged transaction touched. squall's SQLite and Redis states
do the key groups' and the record's writes of one call as one SQLite transaction or one
Redis MULTI/EXEC pipeline (``apply_all``); a user's provider gets one call per key group.
"""

from __future__ import annotations

import threading
from _thread import get_ident
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Any

from squall.state.base import (
    _ABSENT,
    _DEFERRED,
    _IMMUTABLE,
    _MISSING,
    BufferedKeyValueState,
    InvalidTxidError,
    KeyValueState,
    Op,
    apply_all,
    txids_all,
)

# record fields; WRITTEN: the key groups the task has committed to (a lost one is an error)
COMMITTED, PREPARED, STAGED, WRITTEN = "committed", "prepared", "staged", "written"
OTHER = -1  # the task's own namespace, among the staged key groups of the record
ROUTE_CACHE_SIZE = 65536  # str keys whose state a KeyGroupedState remembers


def group_namespace(prefix: str, group: int) -> str:
    """The namespace of key group ``group`` of the component ``prefix`` (``topology/component``)."""
    return f"{prefix}/kg/{group}"


def task_namespace(prefix: str, index: int) -> str:
    """The namespace of the keys task ``index`` keeps outside its key groups."""
    return f"{prefix}/kg/task-{index}"


def record_namespace(prefix: str, index: int, generation: int) -> str:
    """The namespace of task ``index``'s txid record in plan ``generation``."""
    return f"{prefix}/$kg/task-{index}@g{generation}"


class KeyGroupedState(KeyValueState):
    """A task's keyed state: one provider state per owned key group (see the module docs).

    ``open_state(namespace)`` opens a provider state; ``record`` is the task's record
    state, ``groups`` the key groups it owns, ``num_key_groups`` the topology's K and
    ``hash_key`` the fields grouping's hash (``squall.runtime.hashing.stable_hash``: a key's
    key group is ``hash_key(key) % num_key_groups``; the state layer imports no runtime).
    """

    def __init__(self, open_state: Callable[[str], KeyValueState], prefix: str, index: int,
                 num_key_groups: int, groups: Iterable[int], record: KeyValueState,
                 hash_key: Callable[[Any], int]) -> None:
        self.namespace = f"{prefix}/kg"
        self.prefix = prefix
        self.index = index
        self.num_key_groups = num_key_groups
        self._open_state = open_state
        self._hash = hash_key
        self._record = record
        self._owned: set[int] = set(groups)
        self._states: dict[int, KeyValueState] = {}  # open key groups (OTHER: the task's own)
        self._ids: dict[int, int] = {}  # id(state) -> key group
        self._route: dict[Any, KeyValueState] = {}  # str key -> its state
        self._dirty: set[KeyValueState] = set()  # changed since the last prepare or commit
        self._owner = get_ident()
        # squall's states: a cached counter's get and put are done here, one call, not two
        self._inline = False
        self._lock = threading.RLock()
        self._seq = record.committed_txid() or 0
        self._committed: int | None = record.get(COMMITTED)
        self._prepared: int | None = record.get(PREPARED)
        self._staged: set[int] = set(record.get(STAGED) or ())
        self._written: set[int] = set(record.get(WRITTEN) or ())

    # the map

    def _state(self, group: int) -> KeyValueState:
        state = self._states.get(group)
        if state is None:
            ns = task_namespace(self.prefix, self.index) if group == OTHER else group_namespace(
                self.prefix, group)
            state = self._open_state(ns)
            if isinstance(state, BufferedKeyValueState):
                self._inline = True
                state._owner = self._owner  # the thread whose puts may skip the lock: ours
            self._states[group] = state
            self._ids[id(state)] = group
        return state

    def _state_of(self, key: Any) -> KeyValueState:
        group = self._hash(key) % self.num_key_groups
        state = self._state(group if group in self._owned else OTHER)
        if type(key) is str and len(self._route) < ROUTE_CACHE_SIZE:
            self._route[key] = state
        return state

    def key_group_of(self, key: Any) -> int:
        """The key group of ``key`` (whether this task owns it or not)."""
        return self._hash(key) % self.num_key_groups

    def get(self, key: Any, default: Any = None) -> Any:
        """See ``KeyValueState.get``."""
        state: Any = self._route.get(key) if type(key) is str else None
        if state is None:
            state = self._state_of(key)
        elif self._inline:  # BufferedKeyValueState.get's lock-free path, without its call
            value = state._cache.get(key, _MISSING)
            if type(value) in _IMMUTABLE:
                return value
            if value is _ABSENT:
                return default
        return state.get(key, default)

    def put(self, key: Any, value: Any) -> None:
        """See ``KeyValueState.put``."""
        state: Any = self._route.get(key) if type(key) is str else None
        if state is None:
            state = self._state_of(key)
        elif self._inline and type(value) in _DEFERRED and get_ident() == self._owner:
            cache = state._cache  # BufferedKeyValueState.put's lock-free path, without its call
            if key in cache:
                cache[key] = value
                state._dirty.add(key)
                self._dirty.add(state)
                return
        if get_ident() == self._owner:
            state.put(key, value)
            self._dirty.add(state)
        else:  # a bolt's own thread: serialize with a prepare, commit or rollback
            with self._lock:
                state.put(key, value)
                self._dirty.add(state)

    def delete(self, key: Any) -> Any:
        """See ``KeyValueState.delete``."""
        state = self._route.get(key) if type(key) is str else None
        if state is None:
            state = self._state_of(key)
        with self._lock:
            old = state.delete(key)
            self._dirty.add(state)
        return old

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        """Every owned key group's pairs, then the task's own keys (opens every key group)."""
        with self._lock:
            states = [self._state(g) for g in sorted(self._owned)] + [self._state(OTHER)]
        return chain.from_iterable(iter(s) for s in states)

    def committed_items(self) -> Iterator[tuple[Any, Any]]:
        """The committed pairs only (see ``BufferedKeyValueState.committed_items``)."""
        states = [self._state(g) for g in sorted(self._owned)] + [self._state(OTHER)]
        return chain.from_iterable(committed_items(s) for s in states)

    # key groups

    def key_groups(self) -> list[int]:
        """The key groups this state serves, ascending."""
        return sorted(self._owned)

    def add_key_groups(self, groups: Iterable[int]) -> None:
        """Serve ``groups`` too, from their committed state (their old owner committed them)."""
        with self._lock:
            for g in groups:
                if not 0 <= g < self.num_key_groups:
                    raise ValueError(f"key group {g} is not below {self.num_key_groups}")
                self._owned.add(g)
            self._route.clear()

    def release_key_groups(self, groups: Iterable[int]) -> None:
        """Stop serving ``groups`` (committed by now: their new owner opens what was committed).

        Refused while one of them has changes not yet committed (pending or staged).
        """
        with self._lock:
            groups = set(groups)
            busy = sorted(g for g in groups & self._staged) + sorted(
                self._ids[id(s)] for s in self._dirty if self._ids[id(s)] in groups)
            if busy:
                raise RuntimeError(f"{self.namespace} of task index {self.index}: key groups "
                                   f"{busy} have uncommitted changes; commit before releasing them")
            for g in groups:
                self._owned.discard(g)
                self._written.discard(g)
                state = self._states.pop(g, None)
                if state is not None:
                    self._ids.pop(id(state), None)
                    _close(state)
            self._route.clear()

    # transactions

    def committed_txid(self) -> int | None:
        """The task's last committed txid, as its record says."""
        return self._committed

    def prepared_txid(self) -> int | None:
        """The txid the task staged and has not committed, as its record says."""
        return self._prepared

    def staged_key_groups(self) -> list[int]:
        """The key groups (``OTHER``: the task's own keys) the staged transaction covers."""
        return sorted(self._staged)

    def _record_op(self, committed: int | None, prepared: int | None,
                   staged: set[int]) -> Op:
        record = self._record
        record.put(COMMITTED, committed)
        record.put(PREPARED, prepared)
        record.put(STAGED, sorted(staged))
        return record, "commit", self._seq + 1

    def _recorded(self, committed: int | None, prepared: int | None, staged: set[int]) -> None:
        self._seq += 1
        self._committed, self._prepared, self._staged = committed, prepared, staged

    def prepare_commit(self, txid: int) -> None:
        """See ``State.prepare_commit``: stages the changed key groups and the record."""
        with self._lock:
            if self._committed is not None and txid <= self._committed:
                raise InvalidTxidError(f"state {self.namespace!r} of task index {self.index}: "
                                       f"cannot prepare txid {txid}, txid {self._committed} is "
                                       f"already committed")
            dirty = list(self._dirty)
            groups = {self._ids[id(s)] for s in dirty}
            if self._prepared is not None and self._prepared != txid:
                groups |= self._staged  # a prepare under another txid re-tags every staged group
            staged = self._staged | groups
            ops: list[Op] = [self._record_op(self._committed, txid, staged)]
            ops += [(self._state(g), "prepare", txid) for g in sorted(groups)]
            apply_all(ops)  # the record first: a crash after it settles groups never staged
            self._recorded(self._committed, txid, staged)
            self._dirty.difference_update(dirty)
            self._read_again(groups)

    def commit(self, txid: int) -> None:
        """See ``State.commit``: commits the staged key groups (or, with none, the changed ones)."""
        with self._lock:
            if self._committed is not None and txid <= self._committed:
                return  # a COMMIT replayed after a crash
            if self._prepared is not None and self._prepared != txid:
                raise InvalidTxidError(f"state {self.namespace!r} of task index {self.index}: "
                                       f"cannot commit txid {txid} while txid {self._prepared} "
                                       f"is prepared; commit or roll back {self._prepared} first")
            if self._prepared is None:
                dirty = list(self._dirty)
                groups = {self._ids[id(s)] for s in dirty}
            else:
                dirty, groups = [], set(self._staged)
            ops: list[Op] = [(self._state(g), "commit", txid) for g in sorted(groups)]
            written = self._written | (groups - {OTHER})
            if written != self._written:
                self._record.put(WRITTEN, sorted(written))
            ops.append(self._record_op(txid, None, set()))
            apply_all(ops)  # the record last: a crash before it replays the commit
            self._recorded(txid, None, set())
            self._written = written
            self._dirty.difference_update(dirty)
            self._read_again(groups)

    def _read_again(self, done: set[int]) -> None:
        """A store read through after each checkpoint (Redis) is read again by every key group.

        The key groups of the transaction dropped their caches in it; the others do now.
        """
        first = next(iter(self._states.values()), None)
        if first is None or getattr(first, "keep_cache", True) is not False:
            return
        for group, state in self._states.items():
            if group not in done and state not in self._dirty:
                state.drop_cache()  # type: ignore[attr-defined]

    def rollback(self) -> None:
        """See ``State.rollback``: every staged or changed key group goes back to its commit."""
        with self._lock:
            groups = self._staged | {self._ids[id(s)] for s in self._dirty}
            ops: list[Op] = [(self._state(g), "rollback", None) for g in sorted(groups)]
            ops.append(self._record_op(self._committed, None, set()))
            apply_all(ops)
            self._recorded(self._committed, None, set())
            self._dirty.clear()
            self._route.clear()

    def mark_committed(self, txid: int, written: Iterable[int] = ()) -> None:
        """Record ``txid`` as committed with nothing staged (a task that takes over a new plan).

        ``written``: the owned key groups that hold committed state.
        """
        with self._lock:
            self._written = set(written)
            self._record.put(WRITTEN, sorted(self._written))
            apply_all([self._record_op(txid, None, set())])
            self._recorded(txid, None, set())

    def missing_key_groups(self) -> list[int]:
        """Owned key groups the task committed to whose namespace has no commit now (lost)."""
        with self._lock:
            groups = sorted(self._written & self._owned)
            txids = txids_all(self.open_states(groups))
        return [g for g, (committed, _) in zip(groups, txids, strict=True) if committed is None]

    def open_states(self, groups: Iterable[int]) -> list[KeyValueState]:
        """The provider states of ``groups`` (opened if needed), for recovery and migration."""
        with self._lock:
            return [self._state(g) for g in groups]

    def close(self) -> None:
        """Close every open key group's state and the record."""
        with self._lock:
            for state in self._states.values():
                _close(state)
            self._states.clear()
            self._ids.clear()
            self._route.clear()
            _close(self._record)


def committed_items(state: Any) -> Iterator[tuple[Any, Any]]:
    """``state``'s committed pairs: a staged transaction may yet roll back, so it is skipped.

    squall's providers say it (``committed_items``); a user's ``KeyValueState`` that cannot
    is iterated only when nothing is staged, else this raises (a move waits for the staged
    transaction to commit or roll back).
    """
    items = getattr(state, "committed_items", None)
    if items is not None:
        return items()
    if state.prepared_txid() is not None:
        namespace = getattr(state, "namespace", "")
        raise RuntimeError(f"state {namespace!r} has txid {state.prepared_txid()} staged and its "
                           f"provider cannot list committed values only: the move waits")
    return iter(state)


def _close(state: KeyValueState) -> None:
    close = getattr(state, "close", None)
    if close is not None:
        close()
