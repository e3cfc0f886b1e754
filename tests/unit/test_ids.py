"""Root and edge ids: splitmix64 compiled, getrandbits in plain Python."""

from __future__ import annotations

from squall import _speedups
from squall.api.fields import Fields
from squall.api.tuple import Tuple, new_tuple
from squall.runtime.ids import RandomIds, SplitMix64, id_source


def test_splitmix64_matches_the_reference_sequence():
    # the first outputs of splitmix64 seeded with 0 (Vigna's reference splitmix64.c)
    ids = SplitMix64(0)
    assert [ids.next() for _ in range(3)] == [
        0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_ids_are_64_bit_and_do_not_repeat():
    ids = id_source()
    seen = {ids.next() for _ in range(100_000)}
    assert len(seen) == 100_000
    assert all(0 <= i < 1 << 64 for i in seen)
    assert max(seen) >= 1 << 63  # the top bit is used


def test_generators_are_seeded_apart():
    a, b = SplitMix64(), SplitMix64()
    assert [a.next() for _ in range(4)] != [b.next() for _ in range(4)]


def test_the_compiled_path_uses_splitmix_and_the_plain_path_getrandbits():
    source = id_source()
    if _speedups.STATE == "compiled":
        assert type(source) is SplitMix64
    else:
        assert type(source) is RandomIds


def test_new_tuple_is_a_fresh_tuple():
    f = Fields("a", "b")
    t = new_tuple([1, 2], f, "comp", "s", 7, {5: 9})
    u = Tuple([1, 2], f, "comp", "s", 7, {5: 9})
    for name in Tuple.__slots__:
        assert getattr(t, name) == getattr(u, name), name
    assert t["b"] == 2 and t.id.anchors_to_ids == {5: 9}
