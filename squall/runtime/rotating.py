# cython: boundscheck=False, wraparound=False
"""Timeouts by rotation, as Storm's ``RotatingMap``: the map itself, and a spout's pending roots.

``PendingMap`` is the spout task's map of tracked roots (root -> msg id, emit time), in two
implementations with the same methods and results: compiled, an open-addressing table
keyed by the 64-bit root (``PendingTable`` on ``roottable.RootTable``), whose slots are C
arrays, so tracking and completing a root makes no Python entry object and no int key;
the plain-Python path, a dict (``PendingDict``), faster there than a probe loop in Python.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from squall.runtime.roottable import COMPILED, RootTable, zeros


class RotatingMap:
    """Keys live in the newest bucket; ``rotate`` drops and returns the oldest bucket.

    With ``b`` buckets rotated every ``T / (b - 1)`` seconds, an entry expires between
    ``T`` and ``T * (1 + 1 / (b - 1))`` seconds after it was last put.
    """

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("a RotatingMap needs at least 2 buckets")
        self._buckets: list[dict[Any, Any]] = [{} for _ in range(buckets)]

    def put(self, key: Any, value: Any) -> None:
        """Put ``key`` in the newest bucket, removing it from older ones."""
        buckets = self._buckets
        buckets[0][key] = value
        for i in range(1, len(buckets)):
            buckets[i].pop(key, None)

    def put_new(self, key: Any, value: Any) -> None:
        """Put a key known to be absent (skips the removal from older buckets)."""
        self._buckets[0][key] = value

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, wherever it is."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket[key]
        return default

    def pop(self, key: Any, default: Any = None) -> Any:
        """Remove ``key`` and return its value."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket.pop(key)
        return default

    def touch(self, key: Any) -> bool:
        """Move ``key`` to the newest bucket (restarting its timeout); False if absent."""
        for i, bucket in enumerate(self._buckets):
            if key in bucket:
                if i:
                    self._buckets[0][key] = bucket.pop(key)
                return True
        return False

    def rotate(self) -> dict[Any, Any]:
        """Expire the oldest bucket and return what it held."""
        expired = self._buckets.pop()
        self._buckets.insert(0, {})
        return expired

    def __contains__(self, key: object) -> bool:
        return any(key in b for b in self._buckets)

    def __len__(self) -> int:
        n = 0
        for bucket in self._buckets:  # no generator: a spout asks before every next_tuple
            n += len(bucket)
        return n

    def __iter__(self) -> Iterator[Any]:
        for bucket in self._buckets:
            yield from bucket


class PendingTable(RootTable):
    """A spout task's roots in flight: root -> (msg id, emit time), timed out by rotation.

    Same expiry as a ``RotatingMap`` of ``buckets`` buckets: each slot is stamped with the
    rotation it was put or touched in, and the rotation that ends rotation
    ``g + buckets - 1`` drops it. ``take`` leaves what it removed in ``msg_id`` and
    ``emitted_at`` (no tuple made per root).
    """

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("a PendingMap needs at least 2 buckets")
        self._buckets = buckets
        self._gen = 0
        self._seq = 0  # put/touch order, so expired roots fail in the order they went in
        self.msg_id: Any = None
        self.emitted_at = 0.0
        RootTable.__init__(self)

    def _columns(self, slots: int) -> None:
        self._gens = zeros("q", slots)
        self._seqs = zeros("q", slots)
        self._times = array("d", [0.0]) * slots
        self._ids: list[Any] = [None] * slots

    def _copy(self, src: RootTable, s: int, d: int) -> None:
        t: PendingTable = src  # type: ignore[assignment]
        self._gens[d] = t._gens[s]
        self._seqs[d] = t._seqs[s]
        self._times[d] = t._times[s]
        self._ids[d] = t._ids[s]

    def put_new(self, root: int, msg_id: Any, emitted_at: float) -> None:
        """Track ``root`` (replacing an entry of the same root, should one exist)."""
        i = self._slot(root)
        if not self._state[i]:
            i = self._claim(i, root)
        self._ids[i] = msg_id
        self._times[i] = emitted_at
        self._gens[i] = self._gen
        self._seqs[i] = self._seq
        self._seq += 1

    def take(self, root: int) -> bool:
        """Remove ``root``; False if absent, else its entry is in ``msg_id``/``emitted_at``."""
        i = self._slot(root)
        if not self._state[i]:
            return False
        self.msg_id = self._ids[i]
        self.emitted_at = self._times[i]
        self._ids[self._delete(i)] = None
        return True

    def touch(self, root: int) -> bool:
        """Restart ``root``'s timeout; False if absent."""
        i = self._slot(root)
        if not self._state[i]:
            return False
        if self._gens[i] != self._gen:  # in the newest rotation already: it stays in place
            self._gens[i] = self._gen
            self._seqs[i] = self._seq
            self._seq += 1
        return True

    def __contains__(self, root: object) -> bool:
        if type(root) is not int or not 0 <= root < 1 << 64:  # type: ignore[operator]
            return False
        return bool(self._state[self._slot(root)])  # type: ignore[arg-type]

    def _order(self) -> list[tuple[int, int, int]]:
        """(rotation, put order, slot) of every entry, as a ``RotatingMap`` iterates."""
        return sorted([(-self._gens[i], self._seqs[i], i) for i in range(self._slots)
                       if self._state[i]])

    def __iter__(self) -> Iterator[int]:
        """The roots, newest rotation first and in put order within one, as ``RotatingMap``."""
        return iter([self._keys[i] for _, _, i in self._order()])

    def rotate(self) -> list[tuple[Any, float]]:
        """Expire the oldest rotation; its (msg id, emit time) pairs in put order."""
        oldest = self._gen - (self._buckets - 1)
        self._gen += 1
        order = sorted([(self._seqs[i], i) for i in range(self._slots)
                        if self._state[i] and self._gens[i] <= oldest])
        slots = [i for _, i in order]
        expired = [(self._ids[i], self._times[i]) for i in slots]
        for root in [self._keys[i] for i in slots]:
            self._ids[self._delete(self._slot(root))] = None
        self._shrink()
        return expired


class PendingDict:
    """``PendingTable`` for the plain-Python path: the same methods and results over a dict.

    Each root maps to ``(msg id, emit time, rotation)``. A put or a touch that restamps a
    root moves it to the dict's end, so the dict is in put/touch order and its rotations
    never decrease along it: what a rotation expires is a prefix of the dict.
    """

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("a PendingMap needs at least 2 buckets")
        self._buckets = buckets
        self._gen = 0
        self.msg_id: Any = None
        self.emitted_at = 0.0
        self._roots: dict[int, tuple[Any, float, int]] = {}

    def __len__(self) -> int:
        return len(self._roots)

    def put_new(self, root: int, msg_id: Any, emitted_at: float) -> None:
        """Track ``root`` (replacing an entry of the same root, should one exist)."""
        roots = self._roots
        if root in roots:
            del roots[root]  # the replacement goes to the end, in put order
        roots[root] = (msg_id, emitted_at, self._gen)

    def take(self, root: int) -> bool:
        """Remove ``root``; False if absent, else its entry is in ``msg_id``/``emitted_at``."""
        e = self._roots.pop(root, None)
        if e is None:
            return False
        self.msg_id = e[0]
        self.emitted_at = e[1]
        return True

    def touch(self, root: int) -> bool:
        """Restart ``root``'s timeout; False if absent."""
        roots = self._roots
        e = roots.get(root)
        if e is None:
            return False
        if e[2] != self._gen:  # in the newest rotation already: it stays in place
            del roots[root]
            roots[root] = (e[0], e[1], self._gen)
        return True

    def __contains__(self, root: object) -> bool:
        if type(root) is not int or not 0 <= root < 1 << 64:  # type: ignore[operator]
            return False
        return root in self._roots

    def __iter__(self) -> Iterator[int]:
        """The roots, newest rotation first and in put order within one, as ``RotatingMap``."""
        roots = self._roots
        return iter(sorted(roots, key=lambda root: -roots[root][2]))  # stable: put order kept

    def rotate(self) -> list[tuple[Any, float]]:
        """Expire the oldest rotation; its (msg id, emit time) pairs in put order."""
        oldest = self._gen - (self._buckets - 1)
        self._gen += 1
        roots = self._roots
        expired = []
        for root, e in roots.items():
            if e[2] > oldest:
                break
            expired.append(root)
        return [roots.pop(root)[:2] for root in expired]  # type: ignore[misc]


if TYPE_CHECKING:
    PendingMap = PendingTable
else:
    PendingMap = PendingTable if COMPILED else PendingDict
