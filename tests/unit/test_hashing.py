"""Stable hash (squall/runtime/hashing.py): equal values hash equal, in every process (E7)."""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from squall.runtime.hashing import crc32_bytes, hash_values, stable_hash

ROOT = Path(__file__).resolve().parents[2]


class Color(enum.IntEnum):
    RED = 1


class Word(str, enum.Enum):  # noqa: UP042 - the (str, Enum) mixin is what users write
    HELLO = "hello"


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y


@pytest.mark.parametrize(
    "a, b",
    [
        (1, 1.0),
        (1, True),
        (0, False),
        (0, 0.0),
        (0.0, -0.0),
        (-5, -5.0),
        (2**64, float(2**64)),
        (10**20, 1e20),
        (-(2**63), float(-(2**63))),
        ([1, "a"], [1.0, "a"]),
        ({"k": 1, "j": 2}, {"j": 2.0, "k": 1}),  # order-independent, as dict equality
        ({1: "x"}, {1.0: "x"}),
        (Color.RED, 1),
    ],
    ids=repr,
)
def test_equal_values_hash_equal(a, b):
    assert a == b
    assert stable_hash(a) == stable_hash(b)


def test_str_enum_hashes_as_its_value():
    assert Word.HELLO == "hello"
    assert stable_hash(Word.HELLO) == stable_hash("hello")


def test_unequal_values_of_different_kinds_are_told_apart():
    samples = [None, 0, 1, -1, 1.5, "1", "", b"1", b"", "é", [1], [1, 2], [2, 1], {"1": 1},
               float("inf"), float("-inf"), 2**70]
    hashes = [stable_hash(v) for v in samples]
    assert len(set(hashes)) == len(samples)


def test_nan_hashes_the_same_every_time():
    assert stable_hash(float("nan")) == stable_hash(float("nan"))
    assert stable_hash([float("nan"), 1]) == stable_hash([float("nan"), 1])


def test_none_unicode_bytes():
    assert stable_hash(None) == stable_hash(None)
    assert stable_hash("straße") == stable_hash("stra" + "ße")
    assert stable_hash("日本語") != stable_hash("日本")
    assert stable_hash("\ud800") == stable_hash("\ud800")  # lone surrogate: no crash
    assert stable_hash(b"abc") != stable_hash("abc")


def test_hash_is_32_bit_and_non_negative():
    for v in [None, 2**200, -(2**200), "x" * 1000, [[[]]], {"a": [1, {"b": 2}]}, Point(1, 2)]:
        assert 0 <= stable_hash(v) < 2**32


def test_nested_values():
    a = {"words": ["a", "b", {"n": 1}], "t": (1, 2)}
    b = {"t": (1.0, 2), "words": ["a", "b", {"n": True}]}
    assert stable_hash(a) == stable_hash(b)
    assert stable_hash([[1, 2], [3]]) != stable_hash([[1], [2, 3]])


def test_hash_values_is_order_sensitive():
    assert hash_values(["a", "b"]) != hash_values(["b", "a"])
    assert hash_values([1, "a"]) == hash_values([1.0, "a"])
    assert hash_values([]) == hash_values(())


def test_picklable_objects_fall_back_to_a_deterministic_hash():
    assert stable_hash(Point(1, 2)) == stable_hash(Point(1, 2))
    assert stable_hash(Point(1, 2)) != stable_hash(Point(2, 1))


def test_never_calls_builtin_hash():
    class Salted(str):
        def __hash__(self) -> int:
            raise AssertionError("builtin hash() used")

    assert stable_hash(Salted("k")) == stable_hash("k")


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=10,
))
def test_hash_is_deterministic_for_any_value(value):
    assert stable_hash(value) == stable_hash(value)
    assert 0 <= stable_hash(value) < 2**32


# ---- the same hash in other processes (E7) -------------------------------------------------

KEYS = [
    None, True, 0, 1, -1, 2**63, 2**64 - 1, 2**70, 1.5, "word", "ünïcödé", "日本", "", b"\x00\xff",
    [1, "a"], {"b": 1, "a": [None, 2.5]}, ["x", ["y", {"z": 3}]],
]
SCRIPT = """
import json, sys
from squall.runtime.hashing import stable_hash
keys = {keys}
print(json.dumps([stable_hash(k) for k in keys]))
"""


def hashes_in_subprocess(seed: str, keys_src: str) -> list[int]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(keys=keys_src)],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
    )
    return json.loads(out.stdout)


def test_same_hash_across_processes_with_different_hash_seeds():
    here = [stable_hash(k) for k in KEYS]
    for seed in ("0", "1", "12345", "random"):
        assert hashes_in_subprocess(seed, repr(KEYS)) == here, f"PYTHONHASHSEED={seed}"


def test_frozenset_keys_hash_the_same_across_processes():
    src = "[frozenset({'a', 'b', 'c', 'd', 'e', 'f'}), {'x', 'y', 'z', 'w'}]"
    results = {tuple(hashes_in_subprocess(seed, src)) for seed in ("0", "1", "2", "3", "4", "5")}
    assert len(results) == 1


@given(st.text())
def test_str_hash_is_zlib_crc32_of_its_utf8_bytes(text):
    # the compiled path computes the CRC itself: it must be zlib's, so that a compiled and
    # a plain worker route a word to the same task
    data = text.encode("utf-8", "surrogatepass")
    assert stable_hash(text) == zlib.crc32(data)
    assert crc32_bytes(data) == zlib.crc32(data)


def test_str_hash_of_known_words_is_pinned():
    assert [stable_hash(w) for w in ("the", "cow", "", "日本", "\ud800")] == [
        zlib.crc32(w.encode("utf-8", "surrogatepass")) for w in ("the", "cow", "", "日本", "\ud800")]
    assert stable_hash("the") == 0x3C456DE6
