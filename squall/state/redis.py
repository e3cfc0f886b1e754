"""State in Redis, laid out like Storm's ``RedisKeyValueState``.

Config: ``conf["topology.state.provider.config"] = {"host", "port", "db", "password",
"timeout"}`` (defaults ``127.0.0.1``, ``6379``, ``0``, no password, 5 seconds for connecting
and for each reply). Storm's ``RedisKeyValueStateProvider`` configuration works as it is
(``storm_config``): ``jedisPoolConfig`` with ``host``, ``port``, ``timeout`` (ms),
``database``, ``password``; ``keyClass``, ``valueClass``, ``keySerializerClass`` and
``valueSerializerClass`` name Java types and serializers, which have no meaning here (keys and
values go through squall's codec), so they are accepted with a warning; ``jedisClusterConfig``
(Redis Cluster) is refused, naming ``jedisPoolConfig`` as the alternative.

Needs the ``redis`` package (``pip install 'squall[redis]'``), imported
only when a Redis state is made.

Others may write to a Redis, so pickled values are taken only with ``topology.state.key``
(and then carry its tag; ``squall.state.codec``): without it, state holds msgpack types.

Each namespace has three hashes; the ``{...}`` hash tag keeps them in one Redis Cluster slot:

- ``squall:state:{<ns>}:committed``: encoded key -> encoded value;
- ``squall:state:{<ns>}:staged``: the prepared changes; an empty value marks a deleted key;
- ``squall:state:{<ns>}:txids``: fields ``committed`` and ``prepared``.

``prepare_commit`` and ``commit`` are each one Lua script, so Redis runs each whole with no
other command in between, and each checks the txids it acts on. Both are idempotent, so the
client retries them after a dropped connection. Durability is Redis's: configure AOF
(``appendonly yes``, ``appendfsync always``) to survive a Redis restart.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from squall.state.base import (
    PROVIDER_CONFIG_KEY,
    BufferedKeyValueState,
    Changes,
    KeyValueState,
    Op,
    StateConfigError,
    StateProvider,
    StateUnavailableError,
    _check_txid,
    _Outcome,
    check_namespace,
    provider_config,
)
from squall.state.codec import DEFAULT, Codec, state_key

if TYPE_CHECKING:
    import redis as redis_py

log = logging.getLogger("squall.state.redis")
DEFAULTS: dict[str, Any] = {"host": "127.0.0.1", "port": 6379, "db": 0, "password": None, "timeout": 5.0}
STORM_POOL = "jedisPoolConfig"
STORM_CLUSTER = "jedisClusterConfig"
STORM_IGNORED = ("keyClass", "valueClass", "keySerializerClass", "valueSerializerClass")
STORM_POOL_KEYS = {"host": "host", "port": "port", "timeout": "timeout", "database": "db",
                   "password": "password"}
_warned: set[str] = set()
_TOMBSTONE = b""  # never an encoded value: msgpack always writes at least one byte
_SCAN_COUNT = 1000

# KEYS: staged, txids. ARGV: txid, then key/value pairs. Returns {1, ''}, or {0, committed}
# when txid is already committed.
_PREPARE = """
local committed = redis.call('HGET', KEYS[2], 'committed')
if committed and tonumber(ARGV[1]) <= tonumber(committed) then
  return {0, committed}
end
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[2], 'prepared', ARGV[1])
return {1, ''}
"""

# KEYS: committed, staged, txids. ARGV: txid, '1' if only the staged transaction may be
# applied (the caller staged txid) else '0', then the pending key/value pairs, applied only if
# nothing is prepared. Returns {0, ''} no-op, {1, ''} staged applied, {2, ''} pending applied,
# {3, ''} nothing prepared where the staged transaction was asked for (nothing changed),
# {-1, prepared} when another txid is prepared.
_COMMIT = """
local txid = tonumber(ARGV[1])
local committed = redis.call('HGET', KEYS[3], 'committed')
if committed and txid <= tonumber(committed) then
  return {0, ''}
end
local prepared = redis.call('HGET', KEYS[3], 'prepared')
local changes, first, outcome = ARGV, 3, 2
if prepared then
  if tonumber(prepared) ~= txid then
    return {-1, prepared}
  end
  changes, first, outcome = redis.call('HGETALL', KEYS[2]), 1, 1
elseif ARGV[2] == '1' then
  return {3, ''}
end
for i = first, #changes, 2 do
  if changes[i + 1] == '' then
    redis.call('HDEL', KEYS[1], changes[i])
  else
    redis.call('HSET', KEYS[1], changes[i], changes[i + 1])
  end
end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[3], 'prepared')
redis.call('HSET', KEYS[3], 'committed', ARGV[1])
return {outcome, ''}
"""

# KEYS: txids of states whose own staged transaction is to be committed; ARGV: each one's
# txid. Returns the (1-based) positions of those neither prepared nor committed up to it.
_GONE = """
local gone = {}
for i = 1, #KEYS do
  local txids = redis.call('HMGET', KEYS[i], 'committed', 'prepared')
  if not txids[2] and (not txids[1] or tonumber(txids[1]) < tonumber(ARGV[i])) then
    gone[#gone + 1] = i
  end
end
return gone
"""


class RedisKeyValueState(BufferedKeyValueState):
    """A key-value state in Redis (see the module docs); reconnects by itself after an outage."""

    # Redis is a shared server others may write to or restart: after each prepare and commit
    # a get reads it again, and an outage shows at the first read (RELIABILITY D12)
    keep_cache = False

    def __init__(self, namespace: str, client: redis_py.Redis, where: str, codec: Codec = DEFAULT) -> None:
        super().__init__(namespace, codec)
        self._init_keys(namespace, client, where)
        self._prepare_script = client.register_script(_PREPARE)
        self._commit_script = client.register_script(_COMMIT)
        self._gone_script = client.register_script(_GONE)
        self._borrowed = False

    def _init_keys(self, namespace: str, client: redis_py.Redis, where: str) -> None:
        self._client = client
        self._where = where
        prefix = f"squall:state:{{{namespace}}}"
        self._committed_key = f"{prefix}:committed"
        self._staged_key = f"{prefix}:staged"
        self._txids_key = f"{prefix}:txids"
        self._errors = _redis_errors()

    def committed_txid(self) -> int | None:
        """See ``KeyValueState.committed_txid``."""
        return self._txid("committed")

    def prepared_txid(self) -> int | None:
        """See ``KeyValueState.prepared_txid``."""
        return self._txid("prepared")

    def close(self) -> None:
        """Close this state's connections (a sibling leaves them to the state it came from)."""
        if not self._borrowed:
            self._client.close()

    def _sibling(self, namespace: str) -> RedisKeyValueState:
        state = RedisKeyValueState.__new__(RedisKeyValueState)
        BufferedKeyValueState.__init__(state, namespace, self._codec)
        state._init_keys(namespace, self._client, self._where)
        state._prepare_script = self._prepare_script
        state._commit_script = self._commit_script
        state._gone_script = self._gone_script
        state._lock = self._lock
        state._borrowed = True
        return state

    @classmethod
    def apply_all(cls, ops: Sequence[Op]) -> None:
        """Siblings' prepares, commits and rollbacks in one MULTI/EXEC pipeline (else one each).

        Each script checks its own txids as alone; Redis runs the pipeline whole, so no
        other client's command comes between two of them. A commit of a transaction a state
        staged itself is checked first, under WATCH: if that transaction is gone, none of the
        pipeline runs (a key group must not stay uncommitted under a record that says done).
        """
        first = ops[0][0]
        if any(state._client is not first._client for state, _, _ in ops):
            super().apply_all(ops)
            return
        with first._lock:
            for state, op, txid in ops:
                if op != "rollback":
                    _check_txid(txid)  # type: ignore[arg-type]
                    state._flush()
            guarded = [(state, cast(int, txid)) for state, op, txid in ops
                       if op == "commit" and state._to_commit(txid) is None]
            with first._unavailable_as_error():
                replies = iter(_execute_guarded(first._client, ops, guarded))
            errors = []
            for state, op, txid in ops:
                if op == "prepare":
                    done, committed = next(replies)
                    if done == 0:
                        errors.append(state._already_committed(txid, int(committed)))
                    else:
                        state._pending = {}
                        state._staged_txid = txid
                    state._trim()
                elif op == "commit":
                    outcome, prepared = next(replies)
                    if outcome == -1:
                        errors.append(state._other_prepared(txid, int(prepared)))
                    elif outcome == 3:  # gone after the check: WATCH makes this unreachable
                        errors.append(state._lost(txid))
                    else:
                        state._committed(txid, _OUTCOMES[outcome])
                    state._trim()
                else:
                    next(replies)
                    next(replies)
                    state._forget()
            if errors:
                raise errors[0]

    def txids_all(self, states: list[Any]) -> list[tuple[int | None, int | None]]:
        """The txids of ``states`` (siblings of this one: one pipelined round trip)."""
        if any(s._client is not self._client for s in states):
            return super().txids_all(states)
        with self._unavailable_as_error():
            pipe = self._client.pipeline(transaction=False)
            for s in states:
                pipe.hmget(s._txids_key, "committed", "prepared")
            rows = pipe.execute()
        return [(None if c is None else int(c), None if p is None else int(p)) for c, p in rows]

    def _txid(self, field: str) -> int | None:
        with self._unavailable_as_error():
            value = self._client.hget(self._txids_key, field)
        return None if value is None else int(value)

    def _stored_get(self, ekey: bytes) -> bytes | None:
        with self._unavailable_as_error():
            pipe = self._client.pipeline(transaction=False)  # one round trip for both
            pipe.hget(self._staged_key, ekey)
            pipe.hget(self._committed_key, ekey)
            staged, committed = pipe.execute()
        if staged is not None:
            return None if staged == _TOMBSTONE else staged
        return committed

    def _stored_items(self) -> Iterator[tuple[bytes, bytes]]:
        with self._unavailable_as_error():
            # the client does not decode replies, so every key and value is bytes
            staged = cast(dict[bytes, bytes], self._client.hgetall(self._staged_key))
            # HSCAN may return an entry twice (when the hash is resized meanwhile)
            seen: set[bytes] = set()
            pairs = cast(Iterator[tuple[bytes, bytes]],
                         self._client.hscan_iter(self._committed_key, count=_SCAN_COUNT))
            for ekey, evalue in pairs:
                if ekey not in staged and ekey not in seen:
                    seen.add(ekey)
                    yield ekey, evalue
        for ekey, maybe in staged.items():
            if maybe != _TOMBSTONE:
                yield ekey, maybe

    def _committed_items(self) -> Iterator[tuple[bytes, bytes]]:
        with self._unavailable_as_error():
            seen: set[bytes] = set()  # HSCAN may return an entry twice
            pairs = cast(Iterator[tuple[bytes, bytes]],
                         self._client.hscan_iter(self._committed_key, count=_SCAN_COUNT))
            for ekey, evalue in pairs:
                if ekey not in seen:
                    seen.add(ekey)
                    yield ekey, evalue

    def _stage(self, txid: int, changes: Changes) -> None:
        with self._unavailable_as_error():
            done, committed = self._prepare_script(keys=[self._staged_key, self._txids_key],
                                                   args=[txid, *_flatten(changes)])
        if done == 0:
            raise self._already_committed(txid, int(committed))

    def _commit(self, txid: int, changes: Changes | None) -> _Outcome:
        with self._unavailable_as_error():
            outcome, prepared = self._commit_script(
                keys=[self._committed_key, self._staged_key, self._txids_key],
                args=_commit_args(txid, changes))
        if outcome == -1:
            raise self._other_prepared(txid, int(prepared))
        return _OUTCOMES[outcome]

    def _discard_staged(self) -> None:
        with self._unavailable_as_error():
            pipe = self._client.pipeline(transaction=True)  # MULTI/EXEC
            pipe.delete(self._staged_key)
            pipe.hdel(self._txids_key, "prepared")
            pipe.execute()

    @contextmanager
    def _unavailable_as_error(self) -> Iterator[None]:
        try:
            yield
        except self._errors as e:
            if not _is_unavailable(e):
                raise
            cause = " ".join(str(e).split()) or type(e).__name__  # one line
            raise StateUnavailableError(f"RedisStateProvider: Redis at {self._where} is "
                                        f"unavailable: {cause}") from e


_OUTCOMES = {0: _Outcome.NOOP, 1: _Outcome.STAGED, 2: _Outcome.DIRECT, 3: _Outcome.LOST}


def _commit_args(txid: int, changes: Changes | None) -> list[Any]:
    """``_COMMIT``'s ARGV: changes None asks for the staged transaction only."""
    return [txid, b"1"] if changes is None else [txid, b"0", *_flatten(changes)]


def _execute_guarded(client: redis_py.Redis, ops: Sequence[Op],
                     guarded: list[tuple[RedisKeyValueState, int]]) -> list[Any]:
    """``ops``' scripts in one MULTI/EXEC: its replies, one per script or command.

    ``guarded``: commits of transactions their states staged themselves. Their txids are
    WATCHed and read first; if one of them is neither prepared nor committed, nothing is run
    and the error names it. A change to them before EXEC runs the check again.
    """
    from redis.exceptions import WatchError

    with client.pipeline(transaction=True) as pipe:
        while True:
            try:
                if guarded:
                    keys = [state._txids_key for state, _ in guarded]
                    pipe.watch(*keys)
                    # one script for every key group, not a reply each to parse
                    gone = guarded[0][0]._gone_script(keys=keys, args=[t for _, t in guarded])
                    if gone:
                        lost, asked = guarded[int(gone[0]) - 1]
                        raise lost._lost(asked)
                    pipe.multi()
                for state, op, txid in ops:
                    if op == "prepare":
                        state._prepare_script(keys=[state._staged_key, state._txids_key],
                                              args=[txid, *_flatten(state._pending)], client=pipe)
                    elif op == "commit":
                        state._commit_script(
                            keys=[state._committed_key, state._staged_key, state._txids_key],
                            args=_commit_args(cast(int, txid), state._to_commit(txid)), client=pipe)
                    else:
                        pipe.delete(state._staged_key)
                        pipe.hdel(state._txids_key, "prepared")
                return cast(list[Any], pipe.execute())
            except WatchError:
                continue  # a guarded txid changed between the check and EXEC: check again


def _flatten(changes: Changes) -> list[bytes]:
    pairs: list[bytes] = []
    for ekey, maybe in changes.items():
        pairs += (ekey, _TOMBSTONE if maybe is None else maybe)
    return pairs


def _redis_errors() -> tuple[type[Exception], ...]:
    from redis import exceptions

    return (exceptions.ConnectionError, exceptions.TimeoutError, exceptions.ResponseError)


def _is_unavailable(e: Exception) -> bool:
    """Whether ``e`` means Redis cannot serve us now (rather than a bug in a command)."""
    from redis import exceptions

    if isinstance(e, exceptions.ConnectionError | exceptions.TimeoutError | exceptions.OutOfMemoryError
                  | exceptions.ReadOnlyError):
        return True
    # MISCONF: Redis refuses writes because it cannot persist (e.g. a full disk)
    return isinstance(e, exceptions.ResponseError) and str(e).startswith("MISCONF")


def storm_config(raw: Any) -> tuple[Any, list[str]]:
    """Storm's ``RedisKeyValueStateProvider`` configuration as squall's, and the keys ignored.

    A configuration in squall's own form comes back unchanged.

    >>> storm_config({"keyClass": "java.lang.String",
    ...               "jedisPoolConfig": {"host": "localhost", "port": 6380, "timeout": 2000}})
    ({'host': 'localhost', 'port': 6380, 'timeout': 2.0}, ['keyClass'])
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return raw, []  # provider_config reports it
    if not isinstance(raw, Mapping) or not ({STORM_POOL, STORM_CLUSTER, *STORM_IGNORED} & set(raw)):
        return raw, []
    key = PROVIDER_CONFIG_KEY
    if STORM_CLUSTER in raw:
        raise StateConfigError(f"{key}: {STORM_CLUSTER} (Redis Cluster) is not supported by squall's "
                               f"RedisStateProvider; use {STORM_POOL} with one Redis server's host and port")
    ours = sorted(set(raw) & set(DEFAULTS))
    if ours:
        raise StateConfigError(f"{key} mixes Storm's form ({STORM_POOL}) with squall's keys {ours}; use one")
    unknown = sorted(set(raw) - {STORM_POOL, *STORM_IGNORED})
    if unknown:
        raise StateConfigError(f"{key} has unknown keys {unknown} for Storm's RedisKeyValueStateProvider; "
                               f"known: {sorted([STORM_POOL, STORM_CLUSTER, *STORM_IGNORED])}")
    pool = raw.get(STORM_POOL) or {}
    if not isinstance(pool, Mapping):
        raise StateConfigError(f"{key}: {STORM_POOL} must be an object with host, port, timeout, database, "
                               f"password; got {pool!r}")
    bad = sorted(set(pool) - set(STORM_POOL_KEYS))
    if bad:
        raise StateConfigError(f"{key}: {STORM_POOL} has unknown keys {bad}; "
                               f"known: {sorted(STORM_POOL_KEYS)}")
    out: dict[str, Any] = {}
    for storm_key, value in pool.items():
        if storm_key == "timeout":  # Jedis counts milliseconds
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise StateConfigError(f"{key}: {STORM_POOL}.timeout must be a positive number of "
                                       f"milliseconds, got {value!r}")
            value = value / 1000.0
        out[STORM_POOL_KEYS[storm_key]] = value
    return out, [k for k in STORM_IGNORED if k in raw]


class RedisStateProvider(StateProvider):
    """State in Redis (Storm's ``RedisKeyValueStateProvider``); see the module docs."""

    def new_state(self, namespace: str, conf: Mapping[str, Any], context: Any) -> KeyValueState:
        """The state of ``namespace`` in the configured Redis (connects on first use)."""
        check_namespace(namespace, context)
        translated, ignored = storm_config(conf.get(PROVIDER_CONFIG_KEY))
        for k in ignored:
            if k not in _warned:  # once per process, not once per task
                _warned.add(k)
                log.warning("%s: %s names a Java class, which has no meaning in squall (keys and "
                            "values are encoded by squall's codec); ignored", PROVIDER_CONFIG_KEY, k)
        if ignored or translated is not conf.get(PROVIDER_CONFIG_KEY):
            conf = {**conf, PROVIDER_CONFIG_KEY: translated}
        cfg = provider_config(conf, "RedisStateProvider", DEFAULTS)
        try:
            redis_py = importlib.import_module("redis")
        except ImportError as e:
            raise ImportError("RedisStateProvider needs the redis package: "
                              "pip install 'squall[redis]'") from e
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        timeout = float(cfg["timeout"])
        client = redis_py.Redis(
            host=cfg["host"], port=int(cfg["port"]), db=int(cfg["db"]), password=cfg["password"],
            socket_timeout=timeout, socket_connect_timeout=timeout,
            # Two quick retries get past a pooled connection that died with a restarted
            # server; longer outages surface as StateUnavailableError for the caller to handle.
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
        )
        where = f"{cfg['host']}:{cfg['port']} (db {cfg['db']})"
        # others may write to a Redis: pickles only with the topology's tag
        codec = Codec(state_key(conf), trusted=False, where=f"Redis at {where}")
        return RedisKeyValueState(namespace, client, where, codec)
