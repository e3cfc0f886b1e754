# cython: boundscheck=False, wraparound=False
"""Open addressing keyed by a 64-bit root: the machinery under the compiled root tables.

``RootTable`` holds the keys and a state byte per slot (0: empty) in parallel arrays and
finds a root by linear probing from the top bits of a multiplicative hash; deletion
shifts back the entries whose probe passed through the hole (no tombstones); the table
doubles past half full and ``_shrink`` gives back what a burst took. Subclasses add their
own columns (``_columns``) and copy a slot's values between tables (``_copy``): the
acker's ledger and its buffer of remote acks (``acker.py``) and the spout's pending map
(``rotating.py``). Compiled, the arrays are typed C memoryviews and a probe is a few C
instructions with no Python object per root.

The plain-Python path uses dict-backed twins of those tables instead (a probe loop in
Python costs more than a dict lookup); ``COMPILED`` tells the modules which path runs.
"""

from __future__ import annotations

from array import array

MIN_SLOTS = 64  # a power of two; the table doubles past half full
# this module and the tables built on it are compiled all together or not at all
# (squall._speedups), so this one test answers for each of them
COMPILED = not __file__.endswith(".py")


def zeros(code: str, n: int) -> array:
    """An ``array.array`` of ``n`` zeros of type ``code``."""
    return array(code, [0]) * n


class RootTable:
    """Slots of 64-bit keys with a state byte each; the subclasses' columns ride along."""

    def __init__(self) -> None:
        # constants in typed fields: compiled, the hash is unsigned 64-bit C arithmetic
        self._mix = 0x9E3779B97F4A7C15
        self._umask = 0xFFFFFFFFFFFFFFFF
        self._used = 0
        self._alloc(MIN_SLOTS)

    def __len__(self) -> int:
        return self._used

    def _alloc(self, slots: int) -> None:
        """Empty slots, ``slots`` of them (a power of two), in place of the current ones."""
        self._slots = slots
        self._mask = slots - 1
        bits = 0
        while (1 << bits) < slots:
            bits += 1
        self._shift = 64 - bits  # the hash's top log2(slots) bits are the home slot
        self._keys = zeros("Q", slots)
        self._state = zeros("B", slots)
        self._columns(slots)

    def _columns(self, slots: int) -> None:
        """Allocate the subclass's columns for ``slots`` slots."""

    def _copy(self, src: RootTable, s: int, d: int) -> None:
        """Copy the subclass's columns of slot ``s`` of ``src`` to slot ``d`` (key, state: done)."""

    def _home(self, root: int) -> int:
        return ((root * self._mix) & self._umask) >> self._shift

    def _slot(self, root: int) -> int:
        """The slot holding ``root``, or the empty slot where it would go."""
        i = self._home(root)
        mask = self._mask
        while self._state[i] and self._keys[i] != root:
            i = (i + 1) & mask
        return i

    def _claim(self, i: int, root: int) -> int:
        """Put ``root`` in the empty slot ``i`` that ``_slot`` gave (state 1); its slot then.

        The subclass sets the new slot's columns.
        """
        if (self._used + 1) * 2 > self._slots:
            self._resize(self._slots * 2)
            i = self._slot(root)
        self._used += 1
        self._keys[i] = root
        self._state[i] = 1
        return i

    def _delete(self, i: int) -> int:
        """Empty slot ``i``, shifting back the entries whose probe passed through it.

        Returns the slot left empty in the end (``i`` or one an entry moved from).
        """
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
                self._keys[i] = self._keys[j]
                self._state[i] = self._state[j]
                self._copy(self, j, i)
                i = j
        self._state[i] = 0
        return i

    def _resize(self, slots: int) -> None:
        """Rehash into ``slots`` slots (the entries, their state and columns)."""
        n = self._slots
        # the current slots move aside into a table of the same kind, then come back
        # rehashed: a copy more than needed, but resizing is rare and the subclasses then
        # only say how to copy one slot
        old = type(self).__new__(type(self))
        old._alloc(n)
        for s in range(n):
            if self._state[s]:
                old._keys[s] = self._keys[s]
                old._state[s] = self._state[s]
                old._copy(self, s, s)
        self._alloc(slots)
        for s in range(n):
            if old._state[s]:
                i = self._slot(old._keys[s])
                self._keys[i] = old._keys[s]
                self._state[i] = old._state[s]
                self._copy(old, s, i)

    def _shrink(self) -> None:
        """After a burst (under an eighth full), give back most of the slots it took."""
        if self._slots > MIN_SLOTS and self._used * 8 < self._slots:
            self._resize(max(MIN_SLOTS, self._slots // 4))
