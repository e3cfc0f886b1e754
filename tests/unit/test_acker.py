"""The acker's XOR ledger (squall/runtime/acker.py): RELIABILITY A1-A3, A8, A9, A12, A13, A15."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from squall.runtime.acker import LedgerDict, LedgerTable, Outcome

# every test runs on both ledgers: the C table (compiled, or its source in plain Python) and
# the plain path's dict twin; ``squall.runtime.acker.AckerLedger`` is one of them
pytestmark = pytest.mark.parametrize("ledger_class", [LedgerTable, LedgerDict], ids=["table", "dict"])

ROOT = 0xDEADBEEF
SPOUT = 7


def edges(n: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(64) | 1 for _ in range(n)]  # never 0


def xor(*values: int) -> int:
    acc = 0
    for v in values:
        acc ^= v
    return acc


# ---- linear trees and fan-out (A1, A2) ------------------------------------------------


def test_single_edge_tree_acks_when_its_tuple_is_acked(ledger_class):
    (e,) = edges(1)
    ledger = ledger_class()
    assert ledger.init(ROOT, e, SPOUT) is None
    assert ledger.ack(ROOT, e) == Outcome("ack", ROOT, SPOUT)
    assert len(ledger) == 0


def test_linear_tree_completes_only_after_the_last_bolt_acks(ledger_class):
    e1, e2, e3 = edges(3)
    ledger = ledger_class()
    assert ledger.init(ROOT, e1, SPOUT) is None
    assert ledger.ack(ROOT, e1 ^ e2) is None  # bolt 1 emitted e2 anchored, acked e1
    assert ledger.ack(ROOT, e2 ^ e3) is None  # bolt 2 emitted e3
    assert len(ledger) == 1
    assert ledger.ack(ROOT, e3) == Outcome("ack", ROOT, SPOUT)
    assert len(ledger) == 0


def test_fan_out_tree_is_never_acked_early(ledger_class):
    a, b, c, d = edges(4)
    ledger = ledger_class()
    assert ledger.init(ROOT, a ^ b, SPOUT) is None  # spout tuple to two bolts
    assert ledger.ack(ROOT, a ^ c) is None  # bolt A forwards c to the joiner
    assert ledger.ack(ROOT, b ^ d) is None  # bolt B forwards d to the joiner
    assert ledger.ack(ROOT, c) is None
    assert ledger.ack(ROOT, d) == Outcome("ack", ROOT, SPOUT)


def test_trees_are_independent(ledger_class):
    (e,) = edges(1)
    (f,) = edges(1, seed=2)
    ledger = ledger_class()
    ledger.init(1, e, SPOUT)
    ledger.init(2, f, SPOUT + 1)
    assert ledger.ack(2, f) == Outcome("ack", 2, SPOUT + 1)
    assert len(ledger) == 1
    assert ledger.ack(1, e) == Outcome("ack", 1, SPOUT)


# ---- failure (A3, A6) -----------------------------------------------------------------


def test_fail_fails_the_whole_tree_at_once(ledger_class):
    a, b = edges(2)
    ledger = ledger_class()
    ledger.init(ROOT, a ^ b, SPOUT)
    assert ledger.ack(ROOT, a) is None
    assert ledger.fail(ROOT) == Outcome("fail", ROOT, SPOUT)
    assert len(ledger) == 0


def test_ack_after_fail_is_ignored(ledger_class):
    a, b = edges(2)
    ledger = ledger_class()
    ledger.init(ROOT, a ^ b, SPOUT)
    ledger.fail(ROOT)
    assert ledger.ack(ROOT, a) is None
    assert ledger.ack(ROOT, b) is None


# ---- out-of-order messages (A9) -------------------------------------------------------


def test_ack_before_init_completes_when_init_arrives(ledger_class):
    a, b = edges(2)
    ledger = ledger_class()
    assert ledger.ack(ROOT, a ^ b) is None
    assert ledger.ack(ROOT, b) is None
    assert ledger.init(ROOT, a, SPOUT) == Outcome("ack", ROOT, SPOUT)
    assert len(ledger) == 0


def test_fail_before_init_fails_when_init_arrives(ledger_class):
    (a,) = edges(1)
    ledger = ledger_class()
    assert ledger.fail(ROOT) is None  # no spout task known yet: nothing to tell
    assert ledger.init(ROOT, a, SPOUT) == Outcome("fail", ROOT, SPOUT)
    assert len(ledger) == 0


def test_fail_beats_a_complete_xor_when_both_precede_init(ledger_class):
    (a,) = edges(1)
    ledger = ledger_class()
    ledger.ack(ROOT, a)
    ledger.fail(ROOT)
    assert ledger.init(ROOT, a, SPOUT) == Outcome("fail", ROOT, SPOUT)


def test_reset_before_init_is_harmless_and_tree_stays_pending(ledger_class):
    a, b = edges(2)
    ledger = ledger_class()
    assert ledger.reset_timeout(ROOT) is None
    assert ledger.ack(ROOT, a ^ b) is None
    assert ledger.reset_timeout(ROOT) is None  # entry known, spout task not yet
    assert ledger.init(ROOT, a, SPOUT) is None
    assert len(ledger) == 1  # still pending: b not acked
    assert ledger.ack(ROOT, b) == Outcome("ack", ROOT, SPOUT)


def test_reset_after_init_tells_the_spout_task(ledger_class):
    (a,) = edges(1)
    ledger = ledger_class()
    ledger.init(ROOT, a, SPOUT)
    assert ledger.reset_timeout(ROOT) == Outcome("reset", ROOT, SPOUT)
    assert len(ledger) == 1


# ---- duplicates (A13) and unknown roots (A15) ------------------------------------------


def test_duplicate_init_does_not_cancel_the_first(ledger_class):
    a, b = edges(2)
    ledger = ledger_class()
    ledger.init(ROOT, a ^ b, SPOUT)
    assert ledger.init(ROOT, a ^ b, SPOUT) is None  # a retried init
    assert ledger.duplicates == 1
    assert ledger.ack(ROOT, a) is None
    assert ledger.ack(ROOT, b) == Outcome("ack", ROOT, SPOUT)


def test_duplicate_ack_does_not_complete_early(ledger_class):
    a, b = edges(2)
    ledger = ledger_class()
    ledger.init(ROOT, a ^ b, SPOUT)
    ledger.ack(ROOT, a)
    # a second a would otherwise cancel the first and leave b ^ a ^ a ^ ... != 0; a
    # second delivery of a must neither complete nor corrupt the tree
    assert ledger.ack(ROOT, a) is None
    assert ledger.duplicates == 1
    assert len(ledger) == 1
    assert ledger.ack(ROOT, b) == Outcome("ack", ROOT, SPOUT)


def test_duplicate_ack_before_init_is_ignored_too(ledger_class):
    a, b = edges(2)
    ledger = ledger_class()
    ledger.ack(ROOT, a)
    ledger.ack(ROOT, a)
    assert ledger.init(ROOT, a ^ b, SPOUT) is None
    assert ledger.ack(ROOT, b) == Outcome("ack", ROOT, SPOUT)


def test_ack_for_unknown_root_gives_no_outcome(ledger_class):
    ledger = ledger_class()
    assert ledger.ack(12345, 99) is None
    assert ledger.fail(54321) is None


def test_double_ack_after_completion_gives_no_second_outcome(ledger_class):
    (a,) = edges(1)
    ledger = ledger_class()
    ledger.init(ROOT, a, SPOUT)
    assert ledger.ack(ROOT, a) is not None
    assert ledger.ack(ROOT, a) is None
    assert ledger.fail(ROOT) is None


# ---- rotation (A10, A7 on the acker side) ----------------------------------------------


def test_rotation_drops_roots_after_all_buckets(ledger_class):
    (a,) = edges(1)
    ledger = ledger_class(buckets=3)
    ledger.init(ROOT, a, SPOUT)
    assert ledger.rotate() == 0
    assert ledger.rotate() == 0
    assert ledger.rotate() == 1
    assert len(ledger) == 0
    assert ledger.ack(ROOT, a) is None  # late ack: the spout times the root out itself


def test_reset_timeout_keeps_a_root_across_many_rotations(ledger_class):
    (a,) = edges(1)
    ledger = ledger_class(buckets=3)
    ledger.init(ROOT, a, SPOUT)
    for _ in range(10):
        ledger.rotate()
        assert ledger.reset_timeout(ROOT) == Outcome("reset", ROOT, SPOUT)
    assert ledger.ack(ROOT, a) == Outcome("ack", ROOT, SPOUT)


def test_orphans_from_stray_messages_are_dropped_by_rotation(ledger_class):
    ledger = ledger_class(buckets=2)
    ledger.ack(1, 5)
    ledger.fail(2)
    assert len(ledger) == 2
    ledger.rotate()
    assert ledger.rotate() == 2
    assert len(ledger) == 0


# ---- property (A12, A13) ---------------------------------------------------------------


@st.composite
def trees(draw):
    """Messages of one random tuple tree: its init and one ack per tuple."""
    n = draw(st.integers(1, 25))
    parents = [-1] + [draw(st.integers(-1, i - 1)) for i in range(1, n)]
    edge = edges(n, seed=draw(st.integers(0, 2**32)))
    children = {i: [j for j in range(n) if parents[j] == i] for i in range(n)}
    init = ("init", xor(*(edge[j] for j in range(n) if parents[j] == -1)))
    acks = [("ack", edge[i] ^ xor(*(edge[j] for j in children[i]))) for i in range(n)]
    messages = draw(st.permutations([init, *acks]))
    dups = draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n + 1)), max_size=6))
    for src, pos in dups:  # a transport retry: a message delivered twice
        messages.insert(pos, messages[src])
    cut = draw(st.integers(0, len(messages)))  # how many messages have arrived so far
    fail_at = draw(st.none() | st.integers(0, len(messages)))
    return messages, cut, fail_at


def deliver(ledger: LedgerTable | LedgerDict, message: tuple) -> Outcome | None:
    kind, value = message
    if kind == "init":
        return ledger.init(ROOT, value, SPOUT)
    if kind == "fail":
        return ledger.fail(ROOT)
    return ledger.ack(ROOT, value)


@settings(max_examples=300, deadline=None)
@given(trees())
def test_tree_is_decided_exactly_when_every_edge_is_in(ledger_class, tree):
    messages, cut, fail_at = tree
    distinct = set(messages)
    if fail_at is not None:
        messages = [*messages[:fail_at], ("fail", 0), *messages[fail_at:]]
        cut += 1 if fail_at <= cut else 0
    ledger = ledger_class()
    seen: set = set()
    expected = None
    for step, message in enumerate(messages[:cut]):
        seen.add(message)
        outcome = deliver(ledger, message)
        if expected is None:
            has_init = any(m[0] == "init" for m in seen)
            if has_init and ("fail", 0) in seen:
                expected = "fail"
            elif distinct <= seen:
                expected = "ack"
            if expected is None:
                assert outcome is None, f"decided early at step {step}: {outcome}"
            else:
                assert outcome == Outcome(expected, ROOT, SPOUT)
    if expected is None:
        assert len(ledger) == (1 if cut else 0)  # pending, not dropped
