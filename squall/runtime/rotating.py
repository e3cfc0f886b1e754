# cython: boundscheck=False, wraparound=False
"""Timeouts by rotation, as Storm's ``RotatingMap``: the map itself, and a spout's pending roots.

``PendingMap`` is the spout task's map of tracked roots (root -> msg id, emit time) as an
open-addressing hash table keyed by the 64-bit root: compiled, its slots are C arrays, so
tracking and completing a root makes no Python entry object and no int key.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

MIN_SLOTS = 64  # a power of two; the table doubles past half full


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


def _zeros(code: str, n: int) -> array:
    return array(code, [0]) * n


class PendingMap:
    """A spout task's roots in flight: root -> (msg id, emit time), timed out by rotation.

    Same expiry as a ``RotatingMap`` of ``buckets`` buckets: each slot is stamped with the
    rotation it was put or touched in, and the rotation that ends rotation
    ``g + buckets - 1`` drops it. ``take`` leaves what it removed in ``msg_id`` and
    ``emitted_at`` (no tuple made per root). Linear probing, backward-shift deletion.
    """

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("a PendingMap needs at least 2 buckets")
        self._buckets = buckets
        self._gen = 0
        self._seq = 0  # put/touch order, so expired roots fail in the order they went in
        self.msg_id: Any = None
        self.emitted_at = 0.0
        # constants in typed fields: compiled, the hash is unsigned 64-bit C arithmetic
        self._mix = 0x9E3779B97F4A7C15
        self._umask = 0xFFFFFFFFFFFFFFFF
        self._used = 0
        self._alloc(MIN_SLOTS)

    def _alloc(self, slots: int) -> None:
        self._slots = slots
        self._mask = slots - 1
        bits = 0
        while (1 << bits) < slots:
            bits += 1
        self._shift = 64 - bits  # the hash's top log2(slots) bits are the home slot
        self._keys = _zeros("Q", slots)
        self._gens = _zeros("q", slots)
        self._seqs = _zeros("q", slots)
        self._times = array("d", [0.0]) * slots
        self._state = _zeros("B", slots)
        self._ids: list[Any] = [None] * slots

    def __len__(self) -> int:
        return self._used

    def _home(self, root: int) -> int:
        return ((root * self._mix) & self._umask) >> self._shift

    def _slot(self, root: int) -> int:
        """The slot holding ``root``, or the empty slot where it would go."""
        i = self._home(root)
        mask = self._mask
        while self._state[i] and self._keys[i] != root:
            i = (i + 1) & mask
        return i

    def put_new(self, root: int, msg_id: Any, emitted_at: float) -> None:
        """Track ``root`` (replacing an entry of the same root, should one exist)."""
        i = self._slot(root)
        if not self._state[i]:
            if (self._used + 1) * 2 > self._slots:
                self._resize(self._slots * 2)
                i = self._slot(root)
            self._used += 1
            self._keys[i] = root
            self._state[i] = 1
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
        self._delete(i)
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
            self._delete(self._slot(root))
        if self._slots > MIN_SLOTS and self._used * 8 < self._slots:
            self._resize(max(MIN_SLOTS, self._slots // 4))  # give back what a burst took
        return expired

    def _move(self, src: int, dst: int) -> None:
        self._keys[dst] = self._keys[src]
        self._gens[dst] = self._gens[src]
        self._seqs[dst] = self._seqs[src]
        self._times[dst] = self._times[src]
        self._state[dst] = self._state[src]
        self._ids[dst] = self._ids[src]

    def _delete(self, i: int) -> None:
        """Empty slot ``i``, shifting back the entries whose probe passed through it."""
        self._used -= 1
        mask = self._mask
        j = i
        while True:
            j = (j + 1) & mask
            if not self._state[j]:
                break
            k = self._home(self._keys[j])
            # the entry at j may fill the hole at i unless its home lies in (i, j]
            if i <= j:
                stays = i < k <= j
            else:
                stays = k > i or k <= j
            if not stays:
                self._move(j, i)
                i = j
        self._state[i] = 0
        self._ids[i] = None

    def _resize(self, slots: int) -> None:
        keys, gens, seqs, times, states, ids = (self._keys, self._gens, self._seqs, self._times,
                                                self._state, self._ids)
        old = self._slots
        self._alloc(slots)
        for s in range(old):
            if states[s]:
                i = self._slot(keys[s])
                self._keys[i] = keys[s]
                self._gens[i] = gens[s]
                self._seqs[i] = seqs[s]
                self._times[i] = times[s]
                self._state[i] = 1
                self._ids[i] = ids[s]
