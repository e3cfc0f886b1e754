"""Random 64-bit ids for tuple trees (root ids and edge ids).

Compiled, a splitmix64 generator per task makes an id in a few C instructions, where
``random.getrandbits(64)`` is a Python call and a new int each time; each generator is
seeded from ``os.urandom``, so ids of different tasks and processes do not collide any
more often than random ones would. The plain-Python path keeps ``getrandbits``, which is
the faster of the two there.
"""

from __future__ import annotations

import os
import sys
from array import array
from random import getrandbits

_MASK = 0xFFFFFFFFFFFFFFFF
LITTLE = sys.byteorder == "little"


class SplitMix64:
    """splitmix64 (Steele, Lea, Flood 2014): a 64-bit state advanced by a constant, mixed."""

    __slots__ = ("_s", "_gamma", "_m1", "_m2", "_mask")

    def __init__(self, seed: int | None = None) -> None:
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        self._s = seed & _MASK
        # the constants live in typed fields: compiled, the arithmetic is unsigned 64-bit
        # C arithmetic (the masks are then no-ops); in Python it is masked to 64 bits
        self._gamma = 0x9E3779B97F4A7C15
        self._m1 = 0xBF58476D1CE4E5B9
        self._m2 = 0x94D049BB133111EB
        self._mask = _MASK

    def next(self) -> int:
        """The next 64-bit id."""
        mask = self._mask
        s = (self._s + self._gamma) & mask
        self._s = s
        z = ((s ^ (s >> 30)) * self._m1) & mask
        z = ((z ^ (z >> 27)) * self._m2) & mask
        return z ^ (z >> 31)


class RandomIds(SplitMix64):
    """The plain-Python path's ids: ``random.getrandbits(64)``."""

    __slots__ = ()

    def next(self) -> int:
        """The next 64-bit id."""
        return getrandbits(64)


def id_source() -> SplitMix64:
    """A task's generator of ids: splitmix64 when this module runs compiled."""
    return RandomIds() if __file__.endswith(".py") else SplitMix64()


def u64_bytes(ints: array, n: int) -> bytes:
    """The first ``n`` of an ``array("Q")`` as the wire has them: little-endian, 8 bytes each."""
    data = memoryview(ints)[:n].tobytes()
    if LITTLE:
        return data
    swapped = array("Q")
    swapped.frombytes(data)
    swapped.byteswap()
    return swapped.tobytes()


def u64_array(data: bytes) -> array:
    """Little-endian 64-bit ints from the wire as an ``array("Q")`` (a C array, compiled)."""
    ints = array("Q")
    ints.frombytes(data)
    if not LITTLE:
        ints.byteswap()
    return ints
