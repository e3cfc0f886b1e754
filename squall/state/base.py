"""The state interfaces (Storm's ``State``, ``KeyValueState``, ``StateProvider``) and shared logic.

A state changes in three layers, as in Storm's ``RedisKeyValueState``:

- *pending*: changes since the last ``prepare_commit``, kept in memory by the state object;
- *staged*: changes ``prepare_commit(txid)`` wrote durably, tagged with the prepared txid;
- *committed*: what ``commit(txid)`` made the state, with the last committed txid.

``get`` and iteration see committed, then staged, then pending changes on top (a task reads
its own writes). A crash loses only pending changes; staged ones survive it and the
checkpoint protocol decides whether they are committed (``commit(txid)``) or discarded
(``rollback()``).
"""

from __future__ import annotations

import abc
import json
import threading
from _thread import get_ident
from collections.abc import Iterator, Mapping, Sequence
from enum import Enum
from typing import Any

from squall.state.codec import DEFAULT, Codec

PROVIDER_KEY = "topology.state.provider"
PROVIDER_CONFIG_KEY = "topology.state.provider.config"
DEFAULT_PROVIDER = "squall.state.memory.InMemoryStateProvider"

# One pending or staged change: the encoded value, or None for a deleted key (a tombstone).
Changes = dict[bytes, bytes | None]
# (state, "prepare" | "commit" | "rollback", txid): one step of ``apply_all``
Op = tuple[Any, str, "int | None"]


class StateUnavailableError(RuntimeError):
    """The state's storage cannot be reached; the message names the provider, where and why.

    Nothing was changed by the failed call that raised it (pending changes are kept), so the
    same state object can be used again once the storage is back.
    """


class StateConfigError(ValueError):
    """``topology.state.provider`` or its config is wrong; the message names the key."""


class InvalidTxidError(ValueError):
    """A txid out of order: preparing a committed txid, or committing one not prepared.

    Also raised by ``commit(txid)`` of a txid this state object prepared when the store holds
    no prepared transaction any more: its staged changes are gone (another writer to the
    namespace rolled them back, or the store lost them), and committing nothing under
    ``txid`` would lose them silently. Nothing is changed; every retry refuses the same way.
    """


class State(abc.ABC):
    """State saved by the checkpoint protocol in a three-phase commit.

    One task owns a state (its namespace): only that task changes it. Calls on one state
    object are serialized by the object, so the task thread and a checkpoint thread may both
    use it; they must not interleave a transaction's calls in conflicting orders.
    """

    @abc.abstractmethod
    def prepare_commit(self, txid: int) -> None:
        """Durably stage every change since the last commit or prepare as transaction ``txid``.

        Preparing again before a commit (a retried PREPARE) adds the newer changes to the
        staged ones and tags them all with ``txid``. Raises ``InvalidTxidError`` if ``txid``
        is not newer than the last committed txid. Atomic: on error nothing is staged and the
        changes stay pending.
        """

    @abc.abstractmethod
    def commit(self, txid: int) -> None:
        """Make ``txid``'s staged changes the committed state, atomically.

        If nothing is prepared, commits the pending changes directly as ``txid`` (the
        checkpoint spout's own record works so). Committing a txid not newer than the last
        committed one is a no-op (a COMMIT replayed after a crash). Raises
        ``InvalidTxidError`` if another txid is prepared: roll it back or commit it first.
        Changes made after the prepare stay pending for the next transaction.
        """

    @abc.abstractmethod
    def rollback(self) -> None:
        """Discard pending and staged changes: back to the last committed state."""

    def close(self) -> None:  # noqa: B027 - optional hook, most states hold nothing to close
        """Release connections; the object must not be used afterwards. Does not commit."""


class KeyValueState(State):
    """A key-value map saved by the checkpoint protocol.

    Keys and values are msgpack types or picklable objects (see ``squall.state.codec``);
    values are copied when put, so changing an object after ``put`` does not change the state.
    """

    @abc.abstractmethod
    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key`` with this task's uncommitted changes on top, else ``default``."""

    @abc.abstractmethod
    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` (uncommitted until the next prepare and commit)."""

    @abc.abstractmethod
    def delete(self, key: Any) -> Any:
        """Remove ``key`` (uncommitted until the next prepare and commit).

        Returns the value it had in this task's view, or None if it had none (Storm's
        ``KeyValueState.delete``).
        """

    @abc.abstractmethod
    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        """``(key, value)`` pairs of the current view (committed plus uncommitted changes)."""

    @abc.abstractmethod
    def committed_txid(self) -> int | None:
        """The last committed txid, or None if nothing was ever committed."""

    @abc.abstractmethod
    def prepared_txid(self) -> int | None:
        """The txid staged but not yet committed, or None."""


def check_namespace(namespace: str, context: Any) -> str:
    """``namespace`` if the task of ``context`` may open it, else ``StateConfigError``.

    A topology's namespaces start with its name and a slash; a task opens only those, so
    one topology cannot read or change another's state through a provider.
    """
    if not isinstance(namespace, str) or not namespace:
        raise StateConfigError(f"a state namespace is a non-empty string, got {namespace!r}")
    name = getattr(context, "topology_name", None)
    if name is not None and not namespace.startswith(f"{name}/"):
        raise StateConfigError(f"topology {name!r} cannot open state namespace {namespace!r}: a "
                               f"topology opens only its own namespaces ({name}/...)")
    return namespace


class StateProvider(abc.ABC):
    """Makes the state of a namespace; named by ``topology.state.provider``.

    A provider is built with no arguments and reads its settings from
    ``conf["topology.state.provider.config"]`` in ``new_state``.
    """

    @abc.abstractmethod
    def new_state(self, namespace: str, conf: Mapping[str, Any], context: Any) -> State:
        """The state of ``namespace`` as last committed (with any staged transaction).

        ``context`` is the task's ``TopologyContext``, or None outside a topology.
        """


class _Outcome(Enum):
    """What a backend's commit did."""

    NOOP = "noop"  # txid already committed
    STAGED = "staged"  # the prepared transaction was applied
    DIRECT = "direct"  # nothing was prepared: the given pending changes were applied
    LOST = "lost"  # asked for the staged transaction only, and nothing is prepared: no change


# Values of these exact types are kept as given until the next prepare, commit or iteration
# and encoded then: an int, float, bool or bytes object cannot change after ``put`` and always
# encodes, so deferring changes nothing a caller sees, and a counter's put costs no msgpack
# call (a str may hold a lone surrogate, which must fail at put).
_DEFERRED = frozenset({int, float, bool, bytes})
# Values kept decoded in the state's cache of str keys: they cannot change after ``get``
# returns them, so every get may return the same object (a list or a dict is decoded anew
# for each get: the caller may change it).
_IMMUTABLE = _DEFERRED | {str, type(None)}
# encoded str keys remembered per state: a word count's words are encoded once, not per call
KEY_CACHE_SIZE = 4096
# str keys whose current value a state keeps (decoded where immutable, see ``_cache``); above
# this many the clean ones are dropped at the next prepare or commit
VALUE_CACHE_SIZE = 65536
_MISSING = object()
_ABSENT = object()  # cached: the key has no value in this task's view


class _Encoded:
    """A value kept encoded in the cache: each ``get`` decodes it anew (a copy)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class BufferedKeyValueState(KeyValueState):
    """The key-value logic shared by the providers: pending changes in memory, encoded.

    Subclasses store the staged and committed layers and do each of ``_stage``, ``_commit``
    and ``_discard_staged`` atomically; this class keeps the pending changes and clears them
    only after the storage confirms, so a failed call can simply be retried.

    **The cache of str keys.** The current value of a str key, once read or put, is kept in
    ``_cache`` (immutable values as they are, others encoded): a task is the only writer of
    its namespace, so its view changes only by its own puts and deletes, which update the
    cache, and by ``rollback``, which drops it. Prepares and commits do not change the view
    and keep it (unless ``keep_cache`` is False; above ``VALUE_CACHE_SIZE`` keys it is dropped
    then). Keys put
    since the last prepare, commit or iteration are in ``_dirty`` and encoded into the
    pending changes then.

    **The lock.** Two calls take no lock: ``get`` of a str key whose value is cached as an
    int, float, bool, bytes, str or None (or as absent), and
    ``put`` of a str key already cached with an int, float, bool or bytes value from the
    thread that created the state (a stateful bolt's task thread): each is a few dict and
    set operations, atomic under the GIL, that a prepare, commit, rollback or iteration on
    another thread (under the lock) cannot lose or see half done. Every other call takes the
    state's lock: calls from a bolt's own threads, reads that go to the store, other keys
    and values, prepare, commit, rollback and the start of an iteration. Only the creating
    thread drops cache entries at a prepare or commit, since its own unlocked puts cannot
    run at the same time.
    """

    # False: drop the cache at every prepare and commit, so gets read the store again
    keep_cache = True

    def __init__(self, namespace: str, codec: Codec = DEFAULT) -> None:
        self.namespace = namespace
        self._codec = codec
        self._pending: Changes = {}
        # the txid this object staged and has not committed or rolled back: its commit must
        # find that transaction staged, not commit the pending changes in its place
        self._staged_txid: int | None = None
        self._deferred: dict[bytes, Any] = {}  # pending values of other keys, not encoded yet
        self._cache: dict[str, Any] = {}  # str key -> value, _Encoded or _ABSENT (see class docs)
        self._dirty: set[str] = set()  # str keys put or deleted since the last flush
        self._keys: dict[str, bytes] = {}
        self._owner = get_ident()
        # An RLock so that iteration (a generator holding no lock) and calls from a
        # bolt's own threads serialize with the task thread.
        self._lock = threading.RLock()

    def _ekey(self, key: Any) -> bytes:
        if type(key) is str:
            ekey = self._keys.get(key)
            if ekey is None:
                ekey = self._codec.encode_key(key)
                if len(self._keys) < KEY_CACHE_SIZE:
                    self._keys[key] = ekey
            return ekey
        return self._codec.encode_key(key)

    def get(self, key: Any, default: Any = None) -> Any:
        """See ``KeyValueState.get``."""
        if type(key) is str:
            value = self._cache.get(key, _MISSING)
            if type(value) in _IMMUTABLE:  # a counter's value: no lock, no decode
                return value
            if value is _ABSENT:
                return default
        with self._lock:
            if type(key) is str:
                return self._cached(key, default)
            ekey = self._ekey(key)
            value = self._deferred.get(ekey, _MISSING)
            if value is not _MISSING:
                return value
            if ekey in self._pending:
                data = self._pending[ekey]
            else:
                data = self._stored_get(ekey)
        return default if data is None else self._codec.decode(data)

    def _cached(self, key: str, default: Any) -> Any:
        """The view's value of str ``key``, read into the cache if missing (the lock is held)."""
        cache = self._cache
        value = cache.get(key, _MISSING)
        if value is _MISSING:
            ekey = self._ekey(key)
            data = self._pending[ekey] if ekey in self._pending else self._stored_get(ekey)
            if data is None:
                value = _ABSENT
            else:
                value = self._codec.decode(data)
                if type(value) not in _IMMUTABLE:
                    value = _Encoded(data)
            if len(cache) < VALUE_CACHE_SIZE:
                # an unlocked put of the owner thread since the read is newer: keep it
                value = cache.setdefault(key, value)
        if value is _ABSENT:
            return default
        if type(value) is _Encoded:
            return self._codec.decode(value.data)
        return value

    def put(self, key: Any, value: Any) -> None:
        """See ``KeyValueState.put``; raises ``StateSerializationError`` at once if unencodable."""
        if type(key) is str and type(value) in _DEFERRED and get_ident() == self._owner:
            cache = self._cache
            if key in cache:  # its key encoded once already, so it is known to encode
                cache[key] = value
                self._dirty.add(key)
                return
        if type(key) is str:
            ekey = self._ekey(key)  # a key that cannot be encoded fails here, changing nothing
            kind = type(value)
            if kind is str:
                self._codec.encode_value(value)  # a lone surrogate fails now, not at the prepare
            elif kind not in _IMMUTABLE:
                value = _Encoded(self._codec.encode_value(value))
            with self._lock:
                self._cache[key] = value
                self._dirty.add(key)
            return
        ekey = self._ekey(key)
        if type(value) in _DEFERRED:
            with self._lock:
                self._deferred[ekey] = value
            return
        evalue = self._codec.encode_value(value)
        with self._lock:
            self._deferred.pop(ekey, None)
            self._pending[ekey] = evalue

    def delete(self, key: Any) -> Any:
        """See ``KeyValueState.delete``; reads the stored value when no change is pending."""
        with self._lock:
            if type(key) is str:
                old = self._cached(key, None)
                self._cache[key] = _ABSENT
                self._dirty.add(key)
                return old
            ekey = self._ekey(key)
            value = self._deferred.pop(ekey, _MISSING)
            if value is not _MISSING:
                self._pending[ekey] = None
                return value
            data = self._pending[ekey] if ekey in self._pending else self._stored_get(ekey)
            self._pending[ekey] = None
        return None if data is None else self._codec.decode(data)

    def _flush(self) -> None:
        """Encode the cached changes and the deferred values into the pending changes.

        The lock is held. Unlocked puts of the owner thread may run meanwhile (from another
        thread's prepare or iteration): a key is taken off ``_dirty`` before its value is
        read, so a put that lands after the read marks the key again for the next flush.
        """
        pending = self._pending
        encode = self._codec.encode_value
        dirty = self._dirty
        if dirty:
            cache = self._cache
            ekey_of = self._ekey
            while dirty:
                key = dirty.pop()
                value = cache.get(key, _MISSING)
                if value is _MISSING:  # a rollback on another thread dropped it
                    continue
                if value is _ABSENT:
                    pending[ekey_of(key)] = None
                elif type(value) is _Encoded:
                    pending[ekey_of(key)] = value.data
                else:
                    pending[ekey_of(key)] = encode(value)
        if self._deferred:
            for ekey, value in self._deferred.items():
                pending[ekey] = encode(value)
            self._deferred = {}

    def _trim(self) -> None:
        """Drop the cache if the store reads through or it outgrew its bound (lock held, flushed)."""
        if (not self.keep_cache or len(self._cache) > VALUE_CACHE_SIZE) and get_ident() == self._owner:
            self._cache.clear()

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        """See ``KeyValueState.__iter__``; pending changes are taken when iteration starts."""
        with self._lock:
            self._flush()
            pending = dict(self._pending)
        for ekey, evalue in self._stored_items():
            if ekey not in pending:
                yield self._codec.decode(ekey), self._codec.decode(evalue)
        for ekey, maybe in pending.items():
            if maybe is not None:
                yield self._codec.decode(ekey), self._codec.decode(maybe)

    def committed_items(self) -> Iterator[tuple[Any, Any]]:
        """The committed pairs only: no staged transaction, no change made since the last commit.

        What a new generation of a component's states copies (``runtime.stateful``): a
        staged transaction may still be rolled back, and the copy would not roll back with it.
        """
        for ekey, evalue in self._committed_items():
            yield self._codec.decode(ekey), self._codec.decode(evalue)

    def prepare_commit(self, txid: int) -> None:
        """See ``State.prepare_commit``."""
        _check_txid(txid)
        with self._lock:
            self._flush()
            self._stage(txid, self._pending)
            self._pending = {}
            self._staged_txid = txid
            self._trim()

    def commit(self, txid: int) -> None:
        """See ``State.commit``."""
        _check_txid(txid)
        with self._lock:
            self._flush()
            self._committed(txid, self._commit(txid, self._to_commit(txid)))
            self._trim()

    def _to_commit(self, txid: int) -> Changes | None:
        """What ``_commit(txid, ...)`` may apply with nothing prepared: None if this staged ``txid``."""
        return None if self._staged_txid == txid else self._pending

    def _committed(self, txid: int, outcome: _Outcome) -> None:
        """Take in what ``_commit`` did (the lock is held); raises if the staged changes are gone."""
        if outcome is _Outcome.LOST:
            raise self._lost(txid)
        if outcome is _Outcome.DIRECT:
            self._pending = {}
        self._staged_txid = None

    def rollback(self) -> None:
        """See ``State.rollback``."""
        with self._lock:
            self._discard_staged()
            self._forget()

    def _forget(self) -> None:
        """Drop every change not stored (the lock is held)."""
        # _dirty before _cache: an unlocked put between the two leaves a dirty key with
        # no cached value, which the flush skips (the put came before the rollback)
        self._dirty.clear()
        self._cache.clear()
        self._pending = {}
        self._deferred = {}
        self._staged_txid = None

    def drop_cache(self) -> None:
        """Read the store again from now on if it reads through (``keep_cache`` False).

        What a prepare or commit does to the cache, for a state that took no part in one
        (a key group untouched by a checkpoint); only the owner thread drops it.
        """
        if not self.keep_cache and get_ident() == self._owner:
            with self._lock:
                if not self._dirty and not self._pending and not self._deferred:
                    self._cache.clear()

    def sibling(self, namespace: str) -> BufferedKeyValueState:
        """The state of ``namespace`` in the same store, sharing this state's connection and lock.

        A task's key groups (``squall.state.keygrouped``) are siblings of its record, so
        ``apply_all`` can write them in one store transaction. Only the same topology's
        namespaces.
        """
        if namespace.split("/", 1)[0] != self.namespace.split("/", 1)[0]:
            raise StateConfigError(f"state {self.namespace!r} cannot open {namespace!r} of "
                                   f"another topology")
        return self._sibling(namespace)

    def _sibling(self, namespace: str) -> BufferedKeyValueState:
        raise NotImplementedError

    @classmethod
    def apply_all(cls, ops: Sequence[Op]) -> None:
        """Do ``(state, "prepare" | "commit" | "rollback", txid)`` for each; see ``apply_all``.

        Here one call per state; squall's SQLite and Redis states override it to write
        siblings in one store transaction.
        """
        _apply_each(ops)

    def _apply_batched(self, ops: Sequence[Op], transaction: Any) -> None:
        """``ops`` on siblings sharing this state's lock, the store calls inside ``transaction``."""
        with self._lock:
            for state, op, txid in ops:
                if op != "rollback":
                    _check_txid(txid)  # type: ignore[arg-type]
                    state._flush()
            outcomes = []
            with transaction:
                for state, op, txid in ops:
                    if op == "prepare":
                        state._stage(txid, state._pending)
                        outcomes.append(_Outcome.DIRECT)
                    elif op == "commit":
                        outcome = state._commit(txid, state._to_commit(txid))
                        if outcome is _Outcome.LOST:
                            raise state._lost(txid)  # inside: none of the batch is written
                        outcomes.append(outcome)
                    else:
                        state._discard_staged()
                        outcomes.append(_Outcome.NOOP)
            for (state, op, txid), outcome in zip(ops, outcomes, strict=True):
                if op == "rollback":
                    state._forget()
                elif op == "prepare":
                    state._pending = {}
                    state._staged_txid = txid
                    state._trim()
                else:
                    state._committed(txid, outcome)
                    state._trim()

    def txids_all(self, states: list[Any]) -> list[tuple[int | None, int | None]]:
        """``(committed_txid, prepared_txid)`` of each of ``states`` (siblings: one query)."""
        return [(s.committed_txid(), s.prepared_txid()) for s in states]

    def _already_committed(self, txid: int, committed: int) -> InvalidTxidError:
        return InvalidTxidError(f"state {self.namespace!r}: cannot prepare txid {txid}, txid "
                                f"{committed} is already committed")

    def _lost(self, txid: int) -> InvalidTxidError:
        return InvalidTxidError(
            f"state {self.namespace!r}: cannot commit txid {txid}: this task prepared it, but the "
            f"store holds no prepared transaction (another writer to the namespace rolled it back, "
            f"or the store lost it), so its changes are gone; nothing was committed")

    def _other_prepared(self, txid: int, prepared: int) -> InvalidTxidError:
        return InvalidTxidError(f"state {self.namespace!r}: cannot commit txid {txid} while txid "
                                f"{prepared} is prepared; commit or roll back {prepared} first")

    # What a provider implements; the lock is held when these are called.

    @abc.abstractmethod
    def _stored_get(self, ekey: bytes) -> bytes | None:
        """The staged value of ``ekey`` if staged (None if staged deleted), else committed."""

    @abc.abstractmethod
    def _stored_items(self) -> Iterator[tuple[bytes, bytes]]:
        """Encoded pairs of committed with staged changes on top (called without the lock)."""

    @abc.abstractmethod
    def _committed_items(self) -> Iterator[tuple[bytes, bytes]]:
        """Encoded committed pairs, staged changes ignored (called without the lock)."""

    @abc.abstractmethod
    def _stage(self, txid: int, changes: Changes) -> None:
        """Atomically merge ``changes`` into the staged ones and set the prepared txid."""

    @abc.abstractmethod
    def _commit(self, txid: int, changes: Changes | None) -> _Outcome:
        """Atomically: no-op, apply the staged transaction ``txid``, or apply ``changes``.

        ``changes`` None: only the staged transaction may be applied; with nothing prepared,
        change nothing and return ``LOST``.
        """

    @abc.abstractmethod
    def _discard_staged(self) -> None:
        """Atomically drop the staged changes and the prepared txid."""


def apply_all(ops: Sequence[Op]) -> None:
    """Prepare, commit or roll back several states: ``(state, op, txid)`` in order.

    States of one squall store sharing a connection (``BufferedKeyValueState.sibling``) are
    written in one transaction (SQLite) or one MULTI/EXEC pipeline (Redis); any other
    states, a user's provider's, get one call each, in the order given.
    """
    if not ops:
        return
    kind = type(ops[0][0])
    if issubclass(kind, BufferedKeyValueState) and all(type(s) is kind for s, _, _ in ops):
        kind.apply_all(ops)
    else:
        _apply_each(ops)


def _apply_each(ops: Sequence[Op]) -> None:
    for state, op, txid in ops:
        if op == "prepare":
            state.prepare_commit(txid)
        elif op == "commit":
            state.commit(txid)
        elif op == "rollback":
            state.rollback()
        else:
            raise ValueError(f"unknown state operation {op!r}")


def txids_all(states: list[Any]) -> list[tuple[int | None, int | None]]:
    """``(committed_txid, prepared_txid)`` of each state: one store query for siblings."""
    if not states:
        return []
    first = states[0]
    if isinstance(first, BufferedKeyValueState) and all(type(s) is type(first) for s in states):
        return first.txids_all(states)
    return [(s.committed_txid(), s.prepared_txid()) for s in states]


def _staged_gone(committed: int | None, prepared: int | None, txid: int) -> bool:
    """Whether a commit of ``txid`` finds it neither prepared nor committed (the store's txids)."""
    return prepared is None and (committed is None or committed < txid)


def _check_txid(txid: int) -> None:
    # bool is an int; a txid of True is a bug upstream, not transaction 1
    if type(txid) is not int or txid < 0:
        raise InvalidTxidError(f"a txid is a non-negative int, got {txid!r}")


def provider_config(conf: Mapping[str, Any], provider: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``conf["topology.state.provider.config"]`` over ``defaults``; rejects unknown keys.

    The config may also be a JSON object in a string, as Storm's ``storm.yaml`` writes it.
    """
    raw = conf.get(PROVIDER_CONFIG_KEY) or {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise StateConfigError(f"{PROVIDER_CONFIG_KEY} for {provider} is not valid JSON: {e}") from e
    if not isinstance(raw, Mapping):
        raise StateConfigError(f"{PROVIDER_CONFIG_KEY} for {provider} must be a dict, "
                               f"got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(defaults))
    if unknown:
        raise StateConfigError(f"{PROVIDER_CONFIG_KEY} has unknown keys {unknown} for {provider}; "
                               f"known keys: {sorted(defaults)}")
    return {**defaults, **raw}
