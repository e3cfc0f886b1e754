"""State codec: round trips, and keys that encode the same in every process (hash seeds differ)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from squall.state.codec import StateSerializationError, decode, encode_key, encode_value

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary()
hashables = st.recursive(scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
                         max_leaves=10)
values = st.recursive(
    scalars | hashables,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hashables, inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=20)


@given(values)
def test_values_round_trip(value):
    assert decode(encode_value(value)) == value


@given(values)
def test_keys_round_trip(key):
    assert decode(encode_key(key)) == key


@given(st.dictionaries(st.text(max_size=3), st.integers(), max_size=6), st.randoms())
def test_a_dict_key_encodes_the_same_whatever_its_insertion_order(d, rnd):
    items = list(d.items())
    rnd.shuffle(items)
    assert encode_key(dict(items)) == encode_key(d)


KEYS_SCRIPT = ("from squall.state.codec import encode_key; "
               "print(encode_key((frozenset({'a', 'b', 'c', 'd'}), {'x': {1, 2, 'q'}, 'y': 2})).hex())")


def test_key_encoding_does_not_depend_on_the_hash_seed(subprocess_env):
    outputs = {subprocess.run([sys.executable, "-c", KEYS_SCRIPT], check=True, capture_output=True, text=True,
                              env={**subprocess_env, "PYTHONHASHSEED": seed}, timeout=60).stdout
               for seed in ("1", "2", "3", "4")}
    assert len(outputs) == 1


def test_one_true_and_one_point_zero_are_different_keys():
    assert len({encode_key(1), encode_key(True), encode_key(1.0)}) == 3


def test_unknown_ext_type_is_an_error():
    with pytest.raises(ValueError, match="unknown msgpack ext type 42"):
        decode(b"\xd4\x2a\x00")


def test_unpicklable_key_names_its_type():
    with pytest.raises(StateSerializationError, match="state key of type function"):
        encode_key(("ok", lambda: 0))
