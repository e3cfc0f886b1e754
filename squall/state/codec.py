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

Unpickling runs code, so a ``Codec`` says what a state may do with pickles. With a key
(``topology.state.key``; Nimbus gives every topology one) pickles are written with a keyed
BLAKE2b tag, and a tagged pickle is read only if the tag is right. A store another party
can write (``trusted=False``: Redis, a state file others can write) never has a pickle
without the tag loaded, and without a key takes no pickles at all (msgpack types and the
ext types above only). A private store (memory, a private file) also reads untagged
pickles, such as those written before a key was set.

The ext codes below are a storage format: changing one makes stored state unreadable.

>>> decode(encode_key(("word", 3)))
('word', 3)
>>> encode_key({"b": 1, "a": 2}) == encode_key({"a": 2, "b": 1})
True
"""

from __future__ import annotations

import hashlib
import hmac
import pickle
from collections.abc import Mapping
from typing import Any

import msgpack

STATE_KEY = "topology.state.key"
PICKLE_EXT = 1
TUPLE_EXT = 2
SET_EXT = 3
FROZENSET_EXT = 4
BIGINT_EXT = 5
SIGNED_PICKLE_EXT = 6  # a 16-byte tag under the state key, then the pickle
TAG_BYTES = 16
# Fixed rather than HIGHEST_PROTOCOL so that a newer Python writes what an older one reads
# and a pickled key keeps its bytes across upgrades.
PICKLE_PROTOCOL = 5
_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


class StateSerializationError(TypeError):
    """A state key or value cannot be serialized; the message names its type and the cause."""


class Codec:
    """How one state encodes keys and values: see the module docstring for ``key`` and ``trusted``."""

    def __init__(self, key: bytes | None = None, trusted: bool = True, where: str = "this store") -> None:
        self.key = key
        self.trusted = trusted  # only this topology's user can write the store
        self.where = where

    def encode_key(self, key: Any) -> bytes:
        """Canonical bytes of ``key``: equal keys give equal bytes in every process."""
        return _pack(self._canonical(key, "key"))

    def encode_value(self, value: Any) -> bytes:
        """Bytes of ``value`` (not canonical: a value is only ever decoded, never compared)."""
        try:
            return msgpack.packb(value, use_bin_type=True, strict_types=True, default=self._value_default)
        except StateSerializationError:
            raise
        except (OverflowError, ValueError, TypeError) as e:
            raise StateSerializationError(f"state value of type {type(value).__name__} cannot be "
                                          f"serialized: {e}") from e

    def decode(self, data: bytes) -> Any:
        """The key or value that ``encode_key`` or ``encode_value`` turned into ``data``."""
        return msgpack.unpackb(data, ext_hook=self._ext_hook, raw=False, strict_map_key=False)

    def _canonical(self, obj: Any, what: str) -> Any:
        """``obj`` rewritten so that msgpack packs it the same way whatever its build order."""
        t = type(obj)
        if obj is None or t in (str, bytes, bool, float):
            return obj
        if t is int:
            return obj if _INT_MIN <= obj <= _INT_MAX else msgpack.ExtType(BIGINT_EXT, str(obj).encode())
        if t is list:
            return [self._canonical(x, what) for x in obj]
        if t is tuple:
            return msgpack.ExtType(TUPLE_EXT, _pack([self._canonical(x, what) for x in obj]))
        if t is dict:
            items = [(self._canonical(k, what), self._canonical(v, what)) for k, v in obj.items()]
            items.sort(key=lambda kv: _pack(kv[0]))
            return dict(items)
        if t is set or t is frozenset:
            elements = sorted((self._canonical(x, what) for x in obj), key=_pack)
            return msgpack.ExtType(SET_EXT if t is set else FROZENSET_EXT, _pack(elements))
        return self._pickle(obj, what)

    def _value_default(self, obj: Any) -> msgpack.ExtType:
        """Called by msgpack for what it cannot pack itself (``strict_types`` sends tuples here)."""
        t = type(obj)
        if t is tuple:
            return msgpack.ExtType(TUPLE_EXT, self.encode_value(list(obj)))
        if t is set or t is frozenset:
            return msgpack.ExtType(SET_EXT if t is set else FROZENSET_EXT, self.encode_value(list(obj)))
        if t is int:  # beyond 64 bits
            return msgpack.ExtType(BIGINT_EXT, str(obj).encode())
        return self._pickle(obj, "value")

    def _pickle(self, obj: Any, what: str) -> msgpack.ExtType:
        if self.key is None and not self.trusted:
            raise StateSerializationError(
                f"state {what} of type {type(obj).__name__} needs pickle, and {self.where} can be "
                f"written by others: set {STATE_KEY} to a secret so that pickles carry the "
                f"topology's tag (Nimbus sets one), or store msgpack types")
        try:
            data = pickle.dumps(obj, protocol=PICKLE_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - pickling can fail with any exception type
            raise StateSerializationError(f"state {what} of type {type(obj).__name__} cannot be "
                                          f"serialized: {e}") from e
        if self.key is None:
            return msgpack.ExtType(PICKLE_EXT, data)
        return msgpack.ExtType(SIGNED_PICKLE_EXT, _tag(self.key, data) + data)

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code == TUPLE_EXT:
            return tuple(self.decode(data))
        if code == SET_EXT:
            return set(self.decode(data))
        if code == FROZENSET_EXT:
            return frozenset(self.decode(data))
        if code == BIGINT_EXT:
            return int(data.decode())
        if code == PICKLE_EXT:
            if not self.trusted:
                raise StateSerializationError(
                    f"a stored state entry in {self.where} is a pickle without the topology's tag "
                    f"(written by another party, or before {STATE_KEY} was set): refused, never unpickled")
            return pickle.loads(data)  # noqa: S301 - a private store (see the module docstring)
        if code == SIGNED_PICKLE_EXT:
            if self.key is None:
                raise StateSerializationError(
                    f"a stored state entry in {self.where} is a tagged pickle, and no {STATE_KEY} "
                    f"is set to check its tag: refused, never unpickled")
            tag, body = data[:TAG_BYTES], data[TAG_BYTES:]
            if not hmac.compare_digest(tag, _tag(self.key, body)):
                raise StateSerializationError(
                    f"a stored state entry in {self.where} is a pickle whose tag is wrong (not "
                    f"written with this topology's {STATE_KEY}): refused, never unpickled")
            return pickle.loads(body)  # noqa: S301 - tagged with the topology's key
        raise ValueError(f"stored state has an unknown msgpack ext type {code}")


def _tag(key: bytes, data: bytes) -> bytes:
    return hashlib.blake2b(data, key=key, digest_size=TAG_BYTES).digest()


def _pack(obj: Any) -> bytes:
    # strict_types: a subclass (a namedtuple, an IntEnum) must not pass as its base type
    return msgpack.packb(obj, use_bin_type=True, strict_types=True)


def state_key(conf: Mapping[str, Any]) -> bytes | None:
    """The 32-byte key ``conf["topology.state.key"]`` (any secret string) stands for, or None."""
    raw = conf.get(STATE_KEY)
    if not raw:
        return None
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    return hashlib.blake2b(data, digest_size=32, person=b"squall-state").digest()


DEFAULT = Codec()  # private stores with no key: pickles as they are


def encode_key(key: Any) -> bytes:
    """Canonical bytes of ``key`` (``Codec.encode_key`` of the default codec)."""
    return DEFAULT.encode_key(key)


def encode_value(value: Any) -> bytes:
    """Bytes of ``value`` (``Codec.encode_value`` of the default codec)."""
    return DEFAULT.encode_value(value)


def decode(data: bytes) -> Any:
    """The key or value in ``data`` (``Codec.decode`` of the default codec)."""
    return DEFAULT.decode(data)
