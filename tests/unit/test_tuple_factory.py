"""The runtime's tuple factories give every new tuple clean acking state.

Compiled, ``new_tuple`` and ``new_tuple1`` do not reset ``_idmap``, ``_ack_val``, ``_done``
and ``_t0`` (nor ``new_tuple``'s ``_root``/``_edge``): they rely on a new ``Tuple``'s C
fields being None and zero, also when it comes from the free list of freed tuples. These
tuples are dirtied and freed first, so the new ones reuse their memory.
"""

from __future__ import annotations

import gc

from squall import Fields
from squall.api.tuple import Tuple, new_tuple, new_tuple1


def _dirty_and_free(n: int) -> None:
    tuples = []
    for i in range(n):
        t = new_tuple1([i], Fields("n"), "c", "default", 1, 5, 7)
        t._idmap = {1: 2}
        t._ack_val = 0xFFFF
        t._done = True
        t._t0 = 1.5
        t._root = 9
        t._edge = 11
        tuples.append(t)
    del tuples
    gc.collect()


def _clean(t: Tuple) -> bool:
    return t._ack_val == 0 and t._done is False and t._t0 == 0.0


def test_new_tuple1_after_freed_tuples_has_clean_acking_state():
    _dirty_and_free(600)
    made = [new_tuple1([i], Fields("n"), "c", "default", 1, 3, 4) for i in range(600)]
    assert all(_clean(t) and t._idmap is None and t._nroots == 1 for t in made)
    assert all(t._root == 3 and t._edge == 4 and t._ids == {3: 4} for t in made)


def test_new_tuple_after_freed_tuples_has_clean_acking_state():
    _dirty_and_free(600)
    made = [new_tuple([i], Fields("n"), "c", "default", 1, None) for i in range(600)]
    assert all(_clean(t) and t._root == 0 and t._edge == 0 and t._nroots == 0 for t in made)
    assert all(t._ids is None for t in made)
    mapped = [new_tuple([i], Fields("n"), "c", "default", 1, {8: 9}) for i in range(600)]
    assert all(_clean(t) and t._nroots == 2 and t._ids == {8: 9} for t in mapped)
