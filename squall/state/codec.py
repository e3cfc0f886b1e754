"""How state keys and values become bytes: msgpack, with ext types for the rest.

The same encoding is used by every provider, so a key means the same thing in memory, in
SQLite and in Redis. Keys are encoded *canonically*: equal keys built in a different order
(a dict's insertion order, a set's iteration order, which depends on the salted string hash)
encode to the same bytes in every process, so the same key always finds the same stored
entry. Keys compare by their encoding, not by Python's ``==``: ``1``, ``1.0`` and ``True``
are three different keys.

Tuples, sets and ints beyond 64 bits have ext types of their own (so they come back as what
they were and, for keys, encode without pickle); any other object is pickled. A pickled key
is only as deterministic as its pickle: avoid objects holding sets or dicts built in varying
order as keys.

The ext codes below are a storage format: changing one makes stored state unreadable.

>>> decode(encode_key(("word", 3)))
('word', 3)
>>> encode_key({"b": 1, "a": 2}) == encode_key({"a": 2, "b": 1})
True
"""

from __future__ import annotations

import pickle
from typing import Any

import msgpack

PICKLE_EXT = 1
TUPLE_EXT = 2
SET_EXT = 3
FROZENSET_EXT = 4
BIGINT_EXT = 5
# Fixed rather than HIGHEST_PROTOCOL so that a newer Python writes what an older one reads
# and a pickled key keeps its bytes across upgrades.
PICKLE_PROTOCOL = 5
_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


class StateSerializationError(TypeError):
    """A state key or value cannot be serialized; the message names its type and the cause."""


def encode_key(key: Any) -> bytes:
    """Canonical bytes of ``key``: equal keys give equal bytes in every process."""
    return _pack(_canonical(key, "key"))


def encode_value(value: Any) -> bytes:
    """Bytes of ``value`` (not canonical: a value is only ever decoded, never compared)."""
    try:
        return msgpack.packb(value, use_bin_type=True, strict_types=True, default=_value_default)
    except StateSerializationError:
        raise
    except (OverflowError, ValueError, TypeError) as e:
        raise StateSerializationError(f"state value of type {type(value).__name__} cannot be "
                                      f"serialized: {e}") from e


def decode(data: bytes) -> Any:
    """The key or value that ``encode_key`` or ``encode_value`` turned into ``data``."""
    return msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)


def _pack(obj: Any) -> bytes:
    # strict_types: a subclass (a namedtuple, an IntEnum) must not pass as its base type
    return msgpack.packb(obj, use_bin_type=True, strict_types=True)


def _canonical(obj: Any, what: str) -> Any:
    """``obj`` rewritten so that msgpack packs it the same way whatever its build order."""
    t = type(obj)
    if obj is None or t in (str, bytes, bool, float):
        return obj
    if t is int:
        return obj if _INT_MIN <= obj <= _INT_MAX else msgpack.ExtType(BIGINT_EXT, str(obj).encode())
    if t is list:
        return [_canonical(x, what) for x in obj]
    if t is tuple:
        return msgpack.ExtType(TUPLE_EXT, _pack([_canonical(x, what) for x in obj]))
    if t is dict:
        items = [(_canonical(k, what), _canonical(v, what)) for k, v in obj.items()]
        items.sort(key=lambda kv: _pack(kv[0]))
        return dict(items)
    if t is set or t is frozenset:
        elements = sorted((_canonical(x, what) for x in obj), key=_pack)
        return msgpack.ExtType(SET_EXT if t is set else FROZENSET_EXT, _pack(elements))
    return msgpack.ExtType(PICKLE_EXT, _pickle(obj, what))


def _value_default(obj: Any) -> msgpack.ExtType:
    """Called by msgpack for what it cannot pack itself (``strict_types`` sends tuples here)."""
    t = type(obj)
    if t is tuple:
        return msgpack.ExtType(TUPLE_EXT, encode_value(list(obj)))
    if t is set or t is frozenset:
        return msgpack.ExtType(SET_EXT if t is set else FROZENSET_EXT, encode_value(list(obj)))
    if t is int:  # beyond 64 bits
        return msgpack.ExtType(BIGINT_EXT, str(obj).encode())
    return msgpack.ExtType(PICKLE_EXT, _pickle(obj, "value"))


def _pickle(obj: Any, what: str) -> bytes:
    try:
        return pickle.dumps(obj, protocol=PICKLE_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - pickling can fail with any exception type
        raise StateSerializationError(f"state {what} of type {type(obj).__name__} cannot be "
                                      f"serialized: {e}") from e


def _ext_hook(code: int, data: bytes) -> Any:
    if code == TUPLE_EXT:
        return tuple(decode(data))
    if code == SET_EXT:
        return set(decode(data))
    if code == FROZENSET_EXT:
        return frozenset(decode(data))
    if code == BIGINT_EXT:
        return int(data.decode())
    if code == PICKLE_EXT:
        return pickle.loads(data)
    raise ValueError(f"stored state has an unknown msgpack ext type {code}")
