"""A hash of tuple values that is the same in every process and run.

Python's ``hash()`` of ``str`` is salted per process (``PYTHONHASHSEED``), so it cannot
route fields groupings across workers. Equal values hash equally, including ``1 == 1.0``.
"""

from __future__ import annotations

import math
import pickle
import struct
from typing import Any
from zlib import crc32

_MASK = 0xFFFFFFFF
_pack_double = struct.Struct("<d").pack
_NAN = crc32(b"nan")
# compiled, a CRC-32 loop over the bytes in C beats a call of zlib's through Python
_COMPILED = not __file__.endswith(".py")


def stable_hash(value: Any) -> int:
    """A 32-bit hash of ``value``, stable across processes, runs and platforms."""
    t = type(value)
    if t is str:
        return _hash_str(value)
    if t is int:
        return _hash_int(value)
    if t is bytes:
        return crc32(value) ^ 0x5BD1E995
    if value is None:
        return 0x9E3779B9
    if t is bool:
        return _hash_int(int(value))
    if t is float:
        if math.isnan(value):
            return _NAN
        if value.is_integer():
            return _hash_int(int(value))
        return crc32(_pack_double(value))
    if t is tuple or t is list:
        return hash_values(value)
    if t is dict:
        acc = 0x2545F491
        for k, v in value.items():
            # order-independent, as dict equality is
            acc ^= (stable_hash(k) * 31 + stable_hash(v)) & _MASK
        return acc
    if t is set or t is frozenset:
        acc = 0x68E31DA4
        for v in value:
            acc ^= stable_hash(v)  # order-independent: set order depends on the salted hash
        return acc
    # subclasses (str and int enums, ...) hash as their base value, since they compare equal
    if isinstance(value, str):
        return crc32(str.encode(value, "utf-8", "surrogatepass"))
    if isinstance(value, int):
        return _hash_int(int.__index__(value))
    if isinstance(value, float):
        return stable_hash(float.__float__(value))
    if isinstance(value, bytes):
        return stable_hash(bytes(value))
    return crc32(pickle.dumps(value, protocol=4))


def _hash_str(value: str) -> int:
    """CRC-32 of ``value``'s UTF-8 bytes (lone surrogates kept, as ``surrogatepass``)."""
    if _COMPILED:
        crc = crc32_ascii(value)
        if crc >= 0:
            return crc
        return crc32_bytes(value.encode("utf-8", "surrogatepass"))
    return crc32(value.encode("utf-8", "surrogatepass"))


def _crc_table() -> list[int]:
    """The CRC-32 (reflected, polynomial 0xEDB88320) of each byte value: a byte per step."""
    table = []
    for n in range(256):
        crc = n
        for _k in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()  # compiled, a C array (see hashing.pxd)


def crc32_ascii(value: str) -> int:
    """``crc32_bytes`` of ASCII ``value``'s bytes, read from the str (no encoded copy).

    -1 when ``value`` has a character beyond ASCII (whose UTF-8 bytes are not its code).
    """
    full = 0xFFFFFFFF  # typed locals: compiled, a C loop over the characters
    crc = full
    for ch in value:
        b = ord(ch)
        if b > 127:
            return -1
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ full


def crc32_bytes(data: bytes) -> int:
    """``zlib.crc32(data)``, bit by bit: a few C instructions a bit when compiled."""
    poly = 0xEDB88320  # typed locals: compiled, no Python int in the loop
    full = 0xFFFFFFFF
    crc = full
    for b in data:
        crc ^= b
        for _k in range(8):
            crc = (crc >> 1) ^ (poly & -(crc & 1))
    return crc ^ full


def _hash_int(n: int) -> int:
    if -(1 << 63) <= n < (1 << 64):
        return crc32((n & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")) ^ 0x27D4EB2F
    return crc32(str(n).encode())


def hash_values(values: Any) -> int:
    """Combined hash of a sequence of values (the selected grouping fields)."""
    h = 17
    for v in values:
        h = (h * 31 + stable_hash(v)) & _MASK
    return h
