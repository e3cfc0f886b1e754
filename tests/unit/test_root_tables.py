"""The tables keyed by 64-bit roots: the acker's ledger and ack buffer, the spout's ``PendingMap``.

Each comes twice: an open-addressing table (``roottable.RootTable``: linear probing,
backward-shift deletion, growing and shrinking), which the compiled path uses, and a
dict-backed twin for the plain-Python path. Both are checked here, in either path,
against a dict model under random operations, with roots that collide (small ints, equal
high bits), 0 and 2**64 - 1, and enough of them to resize.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from squall import _speedups
from squall.runtime import acker, rotating
from squall.runtime.acker import AckDict, AckTable, LedgerDict, LedgerTable, Outcome
from squall.runtime.ids import u64_array
from squall.runtime.roottable import COMPILED
from squall.runtime.rotating import PendingDict, PendingTable, RotatingMap

ledgers = pytest.mark.parametrize("ledger_class", [LedgerTable, LedgerDict], ids=["table", "dict"])
pendings = pytest.mark.parametrize("pending_class", [PendingTable, PendingDict], ids=["table", "dict"])
buffers = pytest.mark.parametrize("buffer_class", [AckTable, AckDict], ids=["table", "dict"])

TOP = 2**64 - 1
roots = st.one_of(st.integers(0, 40), st.integers(TOP - 5, TOP),
                  st.integers(0, 7).map(lambda k: k << 58),  # same hash bits at small sizes
                  st.integers(0, TOP))


class ModelLedger:
    """The ledger as a dict of entries (the previous implementation), for comparison."""

    def __init__(self, buckets: int = 3) -> None:
        self.entries: dict[int, dict] = {}
        self.buckets = buckets
        self.gen = 0
        self.duplicates = 0

    def _entry(self, root: int) -> dict:
        if root not in self.entries:
            self.entries[root] = {"gen": self.gen, "value": 0, "task": None, "failed": False,
                                  "seen": set(), "detail": None}
        return self.entries[root]

    def _settle(self, root: int, e: dict) -> Outcome | None:
        if e["task"] is None:
            return None
        if e["failed"]:
            del self.entries[root]
            return Outcome("fail", root, e["task"], e["detail"])
        if e["value"] == 0:
            del self.entries[root]
            return Outcome("ack", root, e["task"])
        return None

    def init(self, root: int, value: int, task: int) -> Outcome | None:
        e = self._entry(root)
        if e["task"] is not None:
            self.duplicates += 1
            return None
        e["task"] = task
        e["value"] ^= value
        return self._settle(root, e)

    def ack(self, root: int, value: int, once: bool = True) -> Outcome | None:
        e = self._entry(root)
        if once:
            if value in e["seen"]:
                self.duplicates += 1
                return None
            e["seen"].add(value)
        e["value"] ^= value
        return self._settle(root, e)

    def fail(self, root: int, detail: list | None = None) -> Outcome | None:
        e = self._entry(root)
        e["failed"] = True
        if e["detail"] is None and detail:
            e["detail"] = detail
        return self._settle(root, e)

    def reset_timeout(self, root: int) -> Outcome | None:
        e = self.entries.get(root)
        if e is None:
            return None
        e["gen"] = self.gen
        return None if e["task"] is None else Outcome("reset", root, e["task"])

    def rotate(self) -> int:
        oldest = self.gen - (self.buckets - 1)
        self.gen += 1
        expired = [r for r, e in self.entries.items() if e["gen"] <= oldest]
        for r in expired:
            del self.entries[r]
        return len(expired)


ledger_ops = st.lists(st.one_of(
    st.tuples(st.just("init"), roots, st.integers(0, 3), st.integers(1, 9)),
    st.tuples(st.just("ack"), roots, st.integers(0, 3), st.booleans()),
    st.tuples(st.just("fail"), roots, st.sampled_from([None, ["b", 3, "boom"]]), st.none()),
    st.tuples(st.just("reset"), roots, st.none(), st.none()),
    st.tuples(st.just("rotate"), st.none(), st.none(), st.none()),
), max_size=400)


def test_the_compiled_path_runs_the_tables_and_the_plain_path_the_dicts():
    assert COMPILED == (_speedups.STATE == "compiled")
    assert acker.AckerLedger is (LedgerTable if COMPILED else LedgerDict)
    assert acker.AckBuffer is (AckTable if COMPILED else AckDict)
    assert rotating.PendingMap is (PendingTable if COMPILED else PendingDict)


@ledgers
@settings(max_examples=200, deadline=None)
@given(ops=ledger_ops)
def test_ledger_matches_the_dict_model(ledger_class, ops):
    table, model = ledger_class(), ModelLedger()
    for kind, root, a, b in ops:
        if kind == "init":
            got, want = table.init(root, a, b), model.init(root, a, b)
        elif kind == "ack":
            got, want = table.ack(root, a, b), model.ack(root, a, b)
        elif kind == "fail":
            got, want = table.fail(root, a), model.fail(root, a)
        elif kind == "reset":
            got, want = table.reset_timeout(root), model.reset_timeout(root)
        else:
            got, want = table.rotate(), model.rotate()
        assert got == want, (kind, root, a, b)
        assert len(table) == len(model.entries)
    assert table.duplicates == model.duplicates


@ledgers
def test_ledger_grows_and_shrinks_with_thousands_of_roots(ledger_class):
    ledger = ledger_class()
    for r in range(5000):
        assert ledger.init(r * 0x9E3779B97F4A7C15 % 2**64, 7, 1) is None
    assert len(ledger) == 5000
    for r in range(0, 5000, 2):
        assert ledger.ack(r * 0x9E3779B97F4A7C15 % 2**64, 7) == Outcome(
            "ack", r * 0x9E3779B97F4A7C15 % 2**64, 1)
    assert len(ledger) == 2500
    assert [ledger.rotate() for _ in range(3)] == [0, 0, 2500]
    assert len(ledger) == 0
    assert ledger.init(5, 0, 2) == Outcome("ack", 5, 2)  # still usable after shrinking


pending_ops = st.lists(st.one_of(
    st.tuples(st.just("put"), roots), st.tuples(st.just("take"), roots),
    st.tuples(st.just("touch"), roots), st.tuples(st.just("rotate"), st.none()),
), max_size=400)


@pendings
@settings(max_examples=200, deadline=None)
@given(ops=pending_ops)
def test_pending_map_matches_a_rotating_map(pending_class, ops):
    table, model = pending_class(3), RotatingMap(3)
    for step, (kind, root) in enumerate(ops):
        if kind == "put":
            if root in model:
                model.pop(root)  # PendingMap.put_new replaces; a RotatingMap's put too
            table.put_new(root, f"m{step}", float(step))
            model.put(root, (f"m{step}", float(step)))
        elif kind == "take":
            want = model.pop(root)
            assert table.take(root) == (want is not None)
            if want is not None:
                assert (table.msg_id, table.emitted_at) == want
        elif kind == "touch":
            assert table.touch(root) == model.touch(root)
        else:
            assert table.rotate() == list(model.rotate().values())
        assert len(table) == len(model)
        assert (root in table) == (root in model)
    assert list(table) == list(model)


@pendings
def test_pending_map_expires_between_t_and_one_and_a_half_t(pending_class):
    pending = pending_class(3)  # rotated every T/2
    pending.put_new(1, "a", 0.0)
    assert pending.rotate() == [] and pending.rotate() == []
    pending.put_new(2, "b", 1.0)
    assert pending.rotate() == [("a", 0.0)]
    assert pending.touch(2)
    assert pending.rotate() == [] and pending.rotate() == []
    assert pending.rotate() == [("b", 1.0)]
    assert len(pending) == 0 and not pending.take(2)


@buffers
@settings(max_examples=200, deadline=None)
@given(rounds=st.lists(st.lists(st.tuples(roots, st.integers(0, 3)), max_size=300), max_size=3))
def test_ack_buffer_combines_per_root_like_a_dict(buffer_class, rounds):
    buf = buffer_class()  # reused round after round, as the worker does
    for acks in rounds:
        model: dict[int, int] = {}
        for root, value in acks:
            buf.add(root, value)
            model[root] = model.get(root, 0) ^ value
        data = buf.drain()
        want = [(r, v) for r, v in model.items() if v]  # in the order the roots came
        ints = list(u64_array(data)) if data is not None else []
        assert list(zip(ints[::2], ints[1::2], strict=True)) == want
        assert len(buf) == 0 and buf.drain() is None
