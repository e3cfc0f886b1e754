# cython: boundscheck=False, wraparound=False
"""The acker's XOR ledger, as JStorm's: pure, no threads, no clock.

Each spout tuple tree has a random 64-bit root id. The ledger keeps, per root, the XOR
of every edge id announced and acked. A tuple's edge id enters twice (once when the
tuple is emitted, once when it is acked), so the value returns to 0 exactly when every
tuple of the tree has been acked. The spout task that emitted the root is learnt from
``init``; messages may arrive in any order, and duplicates are ignored.

Two implementations with the same methods and results: compiled, the roots in flight
live in an open-addressing table (``LedgerTable`` on ``roottable.RootTable``: parallel
arrays of root, XOR value, rotation, spout task and flags), so an ack is a probe and an
XOR in C with no Python object per root; the plain-Python path uses a dict of roots
(``LedgerDict``), faster there than a probe loop in Python. ``AckerLedger`` is the one
that suits the running path; ``AckBuffer`` likewise (``AckTable``, ``AckDict``).
"""

from __future__ import annotations

from array import array
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from squall.runtime.ids import u64_bytes
from squall.runtime.roottable import COMPILED, RootTable, zeros

# slot flags (LedgerTable, in the state column: RootTable._claim sets USED)
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


class LedgerCommon:
    """What both ledgers share: the fields of rotation and verdict, messages as ``Outcome``s.

    ``init``/``ack``/``fail``/``reset_timeout`` answer by the ``*_code`` methods (None:
    nothing to tell). ``LedgerDict`` inherits these; ``LedgerTable``, a C type when
    compiled, has them as class attributes.
    """

    _buckets: int
    _gen: int
    duplicates: int
    task: int  # the spout task of the last verdict
    detail: list | None  # the last fail verdict's [component, task, error]

    def _start(self: Any, buckets: int) -> None:
        if buckets < 2:
            raise ValueError("a ledger needs at least 2 buckets")
        self._buckets = buckets
        self._gen = 0
        self.duplicates = 0
        self.task = 0
        self.detail = None

    def _outcome(self: Any, code: int, root: int) -> Outcome | None:
        if code == NOTHING:
            return None
        detail = self.detail if code == FAILED_TREE else None
        return Outcome(_KINDS[code], root, self.task, detail)  # type: ignore[arg-type]

    def init(self: Any, root: int, value: int, spout_task: int) -> Outcome | None:
        """``init_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.init_code(root, value, spout_task), root)

    def ack(self: Any, root: int, value: int, once: bool = True) -> Outcome | None:
        """``ack_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.ack_code(root, value, once), root)

    def fail(self: Any, root: int, detail: list | None = None) -> Outcome | None:
        """``fail_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.fail_code(root, detail), root)

    def reset_timeout(self: Any, root: int) -> Outcome | None:
        """``reset_code`` as an ``Outcome`` (None: nothing to tell)."""
        return self._outcome(self.reset_code(root), root)


class LedgerTable(RootTable):
    """Roots in flight and their XOR values; expired roots are dropped on ``rotate``.

    Each root's slot is stamped with the rotation it was put (or last reset) in: ``b``
    buckets as Storm's ``RotatingMap``, without a map per bucket. A root put in rotation
    ``g`` is dropped by the rotation that ends rotation ``g + b - 1``, so between T and
    ``T * (1 + 1 / (b - 1))`` after it was put, with rotations every ``T / (b - 1)``.

    The ``*_code`` methods are the hot path: they return ``NOTHING``, ``ACKED``,
    ``FAILED_TREE`` or ``RESET`` and leave the spout task in ``task`` (and a fail's detail
    in ``detail``); ``init``/``ack``/``fail``/``reset_timeout`` wrap them in ``Outcome``.
    """

    _buckets: int  # set by ``_start`` (``LedgerCommon``)
    _gen: int
    duplicates: int
    task: int
    detail: list | None

    def __init__(self, buckets: int = 3) -> None:
        self._start(buckets)
        self._details: dict[int, list] = {}  # root -> its first fail's detail
        # ack values that crossed a transport, so a redelivered one is ignored (A13): two
        # per root inline, the rest (rare) in a set per root
        self._more_seen: dict[int, set[int]] = {}
        RootTable.__init__(self)

    def _columns(self, slots: int) -> None:
        self._vals = zeros("Q", slots)
        self._seen0 = zeros("Q", slots)
        self._seen1 = zeros("Q", slots)
        self._gens = zeros("q", slots)
        self._tasks = zeros("q", slots)

    def _copy(self, src: RootTable, s: int, d: int) -> None:
        t: LedgerTable = src  # type: ignore[assignment]
        self._vals[d] = t._vals[s]
        self._seen0[d] = t._seen0[s]
        self._seen1[d] = t._seen1[s]
        self._gens[d] = t._gens[s]
        self._tasks[d] = t._tasks[s]

    def _entry(self, root: int) -> int:
        """The slot of ``root``, made (empty, in the current rotation) if absent."""
        i = self._slot(root)
        if self._state[i]:
            return i
        i = self._claim(i, root)
        self._vals[i] = 0
        self._gens[i] = self._gen
        self._tasks[i] = 0
        return i

    def _drop(self, i: int) -> None:
        """Delete slot ``i`` and what the ledger keeps of its root outside the table."""
        if self._state[i] & (DETAIL | MORE_SEEN):
            root = self._keys[i]
            self._details.pop(root, None)
            self._more_seen.pop(root, None)
        self._delete(i)

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
            self._drop(i)
            return FAILED_TREE
        if self._vals[i] == 0:
            self.task = self._tasks[i]
            self._drop(i)
            return ACKED
        return NOTHING

    # ---- the same, as outcomes ---------------------------------------------------------

    _start = LedgerCommon._start
    _outcome = LedgerCommon._outcome
    init = LedgerCommon.init
    ack = LedgerCommon.ack
    fail = LedgerCommon.fail
    reset_timeout = LedgerCommon.reset_timeout

    def rotate(self) -> int:
        """Drop the oldest bucket (its spouts time those roots out themselves); how many."""
        oldest = self._gen - (self._buckets - 1)
        self._gen += 1
        expired = [self._keys[i] for i in range(self._slots)
                   if self._state[i] and self._gens[i] <= oldest]
        for root in expired:
            self._drop(self._slot(root))
        self._shrink()
        return len(expired)


class LedgerDict(LedgerCommon):
    """``LedgerTable`` for the plain-Python path: the same methods and results over a dict.

    Each root maps to ``[value, spout task or None, rotation, failed, detail, seen]``;
    ``seen`` is None or the set of ack values that crossed a transport.
    """

    def __init__(self, buckets: int = 3) -> None:
        self._start(buckets)
        self._roots: dict[int, list] = {}

    def __len__(self) -> int:
        return len(self._roots)

    def init_code(self, root: int, value: int, spout_task: int) -> int:
        """The spout emitted ``root`` with edges XOR-ing to ``value``."""
        e = self._roots.get(root)
        if e is None:
            if value:
                self._roots[root] = [value, spout_task, self._gen, False, None, None]
                return NOTHING
            self.task = spout_task  # a tree of no edges is done at once
            return ACKED
        if e[1] is not None:
            self.duplicates += 1  # a retried init must not cancel the first one
            return NOTHING
        e[1] = spout_task
        value ^= e[0]
        e[0] = value
        if e[3]:  # a fail came before the init
            self.task = spout_task
            self.detail = e[4]
            del self._roots[root]
            return FAILED_TREE
        if value:
            return NOTHING
        self.task = spout_task
        del self._roots[root]
        return ACKED

    def ack_code(self, root: int, value: int, once: bool) -> int:
        """A tuple of the tree was acked: its edge XOR the edges anchored to it.

        ``once``: the value came through a transport that may redeliver it, so a repeat
        is ignored (see ``LedgerTable.ack_code``).
        """
        roots = self._roots
        e = roots.get(root)
        if e is None:  # before the init: nothing to tell yet
            roots[root] = [value, None, self._gen, False, None, {value} if once else None]
            return NOTHING
        if once:
            seen = e[5]
            if seen is None:
                e[5] = {value}
            elif value in seen:
                self.duplicates += 1
                return NOTHING
            else:
                seen.add(value)
        value ^= e[0]
        e[0] = value
        # with the spout task known, a failed root has been settled already
        if value or e[1] is None:
            return NOTHING
        self.task = e[1]
        del roots[root]
        return ACKED

    def fail_code(self, root: int, detail: list | None) -> int:
        """A tuple of the tree failed: the whole tree fails at once (the first detail kept)."""
        e = self._roots.get(root)
        if e is None:
            self._roots[root] = [0, None, self._gen, True, detail or None, None]
            return NOTHING
        e[3] = True
        if e[4] is None and detail:
            e[4] = detail
        if e[1] is None:
            return NOTHING
        self.task = e[1]
        self.detail = e[4]
        del self._roots[root]
        return FAILED_TREE

    def reset_code(self, root: int) -> int:
        """Restart the root's timeout here and, once its spout task is known, at the spout."""
        e = self._roots.get(root)
        if e is None:
            return NOTHING
        e[2] = self._gen
        if e[1] is None:
            return NOTHING
        self.task = e[1]
        return RESET


    def rotate(self) -> int:
        """Drop the oldest bucket (its spouts time those roots out themselves); how many."""
        oldest = self._gen - (self._buckets - 1)
        self._gen += 1
        roots = self._roots
        expired = [root for root, e in roots.items() if e[2] <= oldest]
        for root in expired:
            del roots[root]
        return len(expired)


class AckTable(RootTable):
    """Acks for one acker of another worker, XOR-combined per root until the round ends.

    A small open-addressing table (root -> XOR), emptied by ``drain`` into the bytes the
    wire carries: little-endian (root, value) pairs, in the order the roots came.
    """

    def __init__(self) -> None:
        RootTable.__init__(self)

    def _columns(self, slots: int) -> None:
        self._vals = zeros("Q", slots)
        self._order = zeros("q", slots)  # the slots in use, in the order their roots came
        self._rank = zeros("q", slots)  # a slot's place in ``_order``

    def _copy(self, src: RootTable, s: int, d: int) -> None:
        t: AckTable = src  # type: ignore[assignment]
        self._vals[d] = t._vals[s]
        k = t._rank[s]
        self._rank[d] = k
        self._order[k] = d

    def add(self, root: int, value: int) -> None:
        """XOR ``value`` into ``root``'s pair."""
        i = self._slot(root)
        if not self._state[i]:
            k = self._used
            i = self._claim(i, root)
            self._vals[i] = 0
            self._order[k] = i
            self._rank[i] = k
        self._vals[i] ^= value

    def drain(self) -> bytes | None:
        """The round's pairs whose value is not 0 as bytes (None if none); empties the buffer."""
        used = self._used
        if used == 0:
            return None
        out = zeros("Q", 2 * used)
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


class AckDict:
    """``AckTable`` for the plain-Python path: root -> XOR in a dict (which keeps the order)."""

    def __init__(self) -> None:
        self._acks: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._acks)

    def add(self, root: int, value: int) -> None:
        """XOR ``value`` into ``root``'s pair."""
        acks = self._acks
        acks[root] = acks.get(root, 0) ^ value

    def drain(self) -> bytes | None:
        """The round's pairs whose value is not 0 as bytes (None if none); empties the buffer."""
        acks = self._acks
        pairs = acks.items()
        if 0 in acks.values():  # acks that cancelled out (rare): left out
            pairs = [pair for pair in pairs if pair[1]]  # type: ignore[assignment]
        out = array("Q", chain.from_iterable(pairs))
        acks.clear()
        return u64_bytes(out, len(out)) if out else None


if TYPE_CHECKING:
    AckerLedger = LedgerTable
    AckBuffer = AckTable
else:
    AckerLedger = LedgerTable if COMPILED else LedgerDict
    AckBuffer = AckTable if COMPILED else AckDict
