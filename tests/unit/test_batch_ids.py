"""A batch's ids on the wire (squall/runtime/worker.py ``_Batch``): 16 bytes per tuple.

Tuples of one tree carry their root and edge in the bytes; untracked tuples and tuples of
several trees are ``0, 0`` there and named in ``others``; a batch with nothing tracked
sends no ids at all.
"""

from __future__ import annotations

import struct

from squall.runtime.ids import u64_array
from squall.runtime.transfer import _Batch

TOP = 2**64 - 1


def batch_of(*entries):
    """A batch to task 1 with one tuple per entry: None, (root, edge) or a {root: edge} map."""
    b = _Batch(1, None, "default")
    for i, entry in enumerate(entries):
        b.values.append([i])
        if type(entry) is tuple:
            b.add1(i, *entry)
        else:
            b.add_other(i, entry)
    return b


def test_an_untracked_batch_sends_no_ids():
    b = batch_of(None, None, None)
    assert b.wire_ids() is None and b.others is None


def test_a_mixed_batch_names_its_untracked_and_several_tree_tuples():
    several = {5: 6, 7: 8}
    b = batch_of(None, (TOP, 1), several, None, (0, TOP))
    data = b.wire_ids()
    assert data == struct.pack("<10Q", 0, 0, TOP, 1, 0, 0, 0, 0, 0, TOP)  # little-endian
    assert list(u64_array(data)) == [0, 0, TOP, 1, 0, 0, 0, 0, 0, TOP]
    assert b.others == {0: None, 2: several, 3: None}


def test_a_batch_of_one_tree_tuples_has_no_others_and_grows_past_its_first_array():
    pairs = [(r * 0x9E3779B97F4A7C15 % 2**64, r) for r in range(1, 101)]
    b = batch_of(*pairs)
    assert b.others is None
    assert list(u64_array(b.wire_ids())) == [x for pair in pairs for x in pair]
