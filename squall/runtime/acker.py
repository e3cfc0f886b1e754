# cython: boundscheck=False, wraparound=False
"""The acker's XOR ledger, as JStorm's: pure, no threads, no clock.

Each spout tuple tree has a random 64-bit root id. The ledger keeps, per root, the XOR
of every edge id announced and acked. A tuple's edge id enters twice (once when the
tuple is emitted, once when it is acked), so the value returns to 0 exactly when every
tuple of the tree has been acked. The spout task that emitted the root is learnt from
``init``; messages may arrive in any order, and duplicates are ignored.

The roots in flight live in an open-addressing hash table keyed by the 64-bit root
(linear probing, backward-shift deletion): parallel arrays of root, XOR value, rotation,
spout task and flags. Compiled, the arrays are typed C memoryviews, so an ack is a probe
and an XOR in C with no Python object per root; the plain-Python path runs the same code
over ``array.array``.
"""

from __future__ import annotations

from array import array
from typing import Literal, NamedTuple

from squall.runtime.ids import u64_bytes

MIN_SLOTS = 64  # a power of two; the table doubles past half full
# slot flags
USED = 1
FAILED = 2
KNOWN = 4  # the init arrived: the spout task is known
DETAIL = 8  # the first fail's detail is in ``_details``
MORE_SEEN = 16  # ack values past the two inline ones are in ``_more_seen``
SEEN_SHIFT = 5  # bits 5-6: how many of the two inline seen values are set
# what a ledger message settled (the ``*_code`` methods' result)
NOTHING = 0
ACKED = 1
FAILED_TREE = 2
RESET = 3
_KINDS = ("", "ack", "fail", "reset")


class Outcome(NamedTuple):
    """What the acker tells a spout task about one root (a named tuple: made once per root)."""

    kind: Literal["ack", "fail", "reset"]
    root: int
    spout_task: int
    detail: list | None = None  # a fail's [component, task, error], when a bolt said


def _zeros(code: str, n: int) -> array:
    return array(code, [0]) * n


class AckerLedger:
    """Roots in flight and their XOR values; expired roots are dropped on ``rotate``.

    Each root's slot is stamped with the rotation it was put (or last reset) in: ``b``
    buckets as Storm's ``RotatingMap``, without a map per bucket. A root put in rotation
    ``g`` is dropped by the rotation that ends rotation ``g + b - 1``, so between T and
    ``T * (1 + 1 / (b - 1))`` after it was put, with rotations every ``T / (b - 1)``.

    The ``*_code`` methods are the hot path: they return ``NOTHING``, ``ACKED``,
    ``FAILED_TREE`` or ``RESET`` and leave the spout task in ``task`` (and a fail's detail
    in ``detail``); ``init``/``ack``/``fail``/``reset_timeout`` wrap them in ``Outcome``.
    """

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("a ledger needs at least 2 buckets")
        self._buckets = buckets
        self._gen = 0
        self.duplicates = 0
        self.task = 0  # the spout task of the last verdict
        self.detail: list | None = None  # the last fail verdict's [component, task, error]
        self._details: dict[int, list] = {}  # root -> its first fail's detail
        # ack values that crossed a transport, so a redelivered one is ignored (A13): two
        # per root inline, the rest (rare) in a set per root
        self._more_seen: dict[int, set[int]] = {}
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
        self._vals = _zeros("Q", slots)
        self._seen0 = _zeros("Q", slots)
        self._seen1 = _zeros("Q", slots)
        self._gens = _zeros("q", slots)
        self._tasks = _zeros("q", slots)
        self._state = _zeros("B", slots)

    def __len__(self) -> int:
        return self._used

    # ---- the table ---------------------------------------------------------------------

    def _home(self, root: int) -> int:
        return ((root * self._mix) & self._umask) >> self._shift

    def _slot(self, root: int) -> int:
        """The slot holding ``root``, or the empty slot where it would go."""
        i = self._home(root)
        mask = self._mask
        while self._state[i] and self._keys[i] != root:
            i = (i + 1) & mask
        return i

    def _entry(self, root: int) -> int:
        """The slot of ``root``, made (empty, in the current rotation) if absent."""
        i = self._slot(root)
        if self._state[i]:
            return i
        if (self._used + 1) * 2 > self._slots:
            self._resize(self._slots * 2)
            i = self._slot(root)
        self._used += 1
        self._keys[i] = root
        self._vals[i] = 0
        self._gens[i] = self._gen
        self._tasks[i] = 0
        self._state[i] = USED
        return i

    def _move(self, src: int, dst: int) -> None:
        self._keys[dst] = self._keys[src]
        self._vals[dst] = self._vals[src]
        self._seen0[dst] = self._seen0[src]
        self._seen1[dst] = self._seen1[src]
        self._gens[dst] = self._gens[src]
        self._tasks[dst] = self._tasks[src]
        self._state[dst] = self._state[src]

    def _delete(self, i: int) -> None:
        """Empty slot ``i``, shifting back the entries whose probe passed through it."""
        state = self._state[i]
        if state & (DETAIL | MORE_SEEN):
            root = self._keys[i]
            self._details.pop(root, None)
            self._more_seen.pop(root, None)
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

    def _resize(self, slots: int) -> None:
        keys, vals, seen0, seen1 = self._keys, self._vals, self._seen0, self._seen1
        gens, tasks, states, old = self._gens, self._tasks, self._state, self._slots
        self._alloc(slots)
        for s in range(old):
            if states[s]:
                i = self._slot(keys[s])
                self._keys[i] = keys[s]
                self._vals[i] = vals[s]
                self._seen0[i] = seen0[s]
                self._seen1[i] = seen1[s]
                self._gens[i] = gens[s]
                self._tasks[i] = tasks[s]
                self._state[i] = states[s]

    # ---- ledger messages (hot) ---------------------------------------------------------

    def init_code(self, root: int, value: int, spout_task: int) -> int:
        """The spout emitted ``root`` with edges XOR-ing to ``value``."""
        i = self._entry(root)
        state = self._state[i]
        if state & KNOWN:
            self.duplicates += 1  # a retried init must not cancel the first one
            return NOTHING
        self._tasks[i] = spout_task
        self._state[i] = state | KNOWN
        self._vals[i] ^= value
        return self._settle(i)

    def ack_code(self, root: int, value: int, once: bool) -> int:
        """A tuple of the tree was acked: its edge XOR the edges anchored to it.

        ``once``: the value came through a transport that may redeliver it, so a repeat
        is ignored. An ack applied in place by a task of this worker cannot repeat (its
        tuple is marked done) and skips that bookkeeping.
        """
        i = self._entry(root)
        if once:
            state = self._state[i]
            n = (state >> SEEN_SHIFT) & 3
            if ((n >= 1 and self._seen0[i] == value) or (n >= 2 and self._seen1[i] == value)
                    or (state & MORE_SEEN and value in self._more_seen[root])):
                self.duplicates += 1
                return NOTHING
            if n == 0:
                self._seen0[i] = value
                self._state[i] = state | (1 << SEEN_SHIFT)
            elif n == 1:
                self._seen1[i] = value
                self._state[i] = (state & ~(3 << SEEN_SHIFT)) | (2 << SEEN_SHIFT)
            elif state & MORE_SEEN:
                self._more_seen[root].add(value)
            else:
                self._more_seen[root] = {value}
                self._state[i] = state | MORE_SEEN
        self._vals[i] ^= value
        return self._settle(i)

    def fail_code(self, root: int, detail: list | None) -> int:
        """A tuple of the tree failed: the whole tree fails at once.

        ``detail`` is where and why (``[component, task, error]``); the first one is kept.
        """
        i = self._entry(root)
        state = self._state[i] | FAILED
        if not state & DETAIL and detail:
            self._details[root] = detail
            state |= DETAIL
        self._state[i] = state
        return self._settle(i)

    def reset_code(self, root: int) -> int:
        """Restart the root's timeout here and, once its spout task is known, at the spout."""
        i = self._slot(root)
        if not self._state[i]:
            return NOTHING
        self._gens[i] = self._gen
        if not self._state[i] & KNOWN:
            return NOTHING
        self.task = self._tasks[i]
        return RESET

    def _settle(self, i: int) -> int:
        state = self._state[i]
        if not state & KNOWN:
            return NOTHING  # the init has not arrived yet: nothing to tell anyone
        if state & FAILED:
            self.task = self._tasks[i]
            self.detail = self._details.get(self._keys[i]) if state & DETAIL else None
            self._delete(i)
            return FAILED_TREE
        if self._vals[i] == 0:
            self.task = self._tasks[i]
            self._delete(i)
            return ACKED
        return NOTHING

    # ---- the same, as outcomes ---------------------------------------------------------

    def _outcome(self, code: int, root: int) -> Outcome | None:
        if code == NOTHING:
            return None
        detail = self.detail if code == FAILED_TREE else None
        return Outcome(_KINDS[code], root, self.task, detail)  # type: ignore[arg-type]

    def init(self, root: int, value: int, spout_task: int) -> Outcome | None:
        """``init_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.init_code(root, value, spout_task), root)

    def ack(self, root: int, value: int, once: bool = True) -> Outcome | None:
        """``ack_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.ack_code(root, value, once), root)

    def fail(self, root: int, detail: list | None = None) -> Outcome | None:
        """``fail_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.fail_code(root, detail), root)

    def reset_timeout(self, root: int) -> Outcome | None:
        """``reset_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.reset_code(root), root)

    def rotate(self) -> int:
        """Drop the oldest bucket (its spouts time those roots out themselves); how many."""
        oldest = self._gen - (self._buckets - 1)
        self._gen += 1
        expired = [self._keys[i] for i in range(self._slots)
                   if self._state[i] and self._gens[i] <= oldest]
        for root in expired:
            self._delete(self._slot(root))
        if self._slots > MIN_SLOTS and self._used * 8 < self._slots:
            self._resize(max(MIN_SLOTS, self._slots // 4))  # give back what a burst took
        return len(expired)


class AckBuffer:
    """Acks for one acker of another worker, XOR-combined per root until the round ends.

    A small open-addressing table (root -> XOR), emptied by ``drain`` into the bytes the
    wire carries: little-endian (root, value) pairs, in the order the roots came.
    """

    def __init__(self) -> None:
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
        self._shift = 64 - bits
        self._keys = _zeros("Q", slots)
        self._vals = _zeros("Q", slots)
        self._state = _zeros("B", slots)
        self._order = _zeros("q", slots)  # the slots in use, in the order their roots came

    def __len__(self) -> int:
        return self._used

    def _slot(self, root: int) -> int:
        i = ((root * self._mix) & self._umask) >> self._shift
        while self._state[i] and self._keys[i] != root:
            i = (i + 1) & self._mask
        return i

    def add(self, root: int, value: int) -> None:
        """XOR ``value`` into ``root``'s pair."""
        i = self._slot(root)
        if not self._state[i]:
            if (self._used + 1) * 2 > self._slots:
                self._grow()
                i = self._slot(root)
            self._keys[i] = root
            self._vals[i] = 0
            self._state[i] = 1
            self._order[self._used] = i
            self._used += 1
        self._vals[i] ^= value

    def _grow(self) -> None:
        keys, vals, order, used = self._keys, self._vals, self._order, self._used
        self._alloc(self._slots * 2)
        for k in range(used):
            s = order[k]
            i = self._slot(keys[s])
            self._keys[i] = keys[s]
            self._vals[i] = vals[s]
            self._state[i] = 1
            self._order[k] = i

    def drain(self) -> bytes | None:
        """The round's pairs whose value is not 0 as bytes (None if none); empties the buffer."""
        used = self._used
        if used == 0:
            return None
        out = _zeros("Q", 2 * used)
        n = 0
        for k in range(used):
            i = self._order[k]
            self._state[i] = 0
            if self._vals[i]:
                out[n] = self._keys[i]
                out[n + 1] = self._vals[i]
                n += 2
        self._used = 0
        return u64_bytes(out, n) if n else None
