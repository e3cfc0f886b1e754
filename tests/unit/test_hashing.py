"""Stable hash (squall/runtime/hashing.py): equal values hash equal, in every process (E7)."""

from __future__ import annotations

import enum
import importlib.util
import json
import math
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import squall.runtime.hashing
from squall.runtime.hashing import crc32_bytes, hash_values, stable_hash

ROOT = Path(__file__).resolve().parents[2]

# Values every squall process must give, on the compiled path and the plain one, whatever its
# PYTHONHASHSEED: fields grouping routes by them, so a change here moves keys between tasks
# (a rolling upgrade, or a compiled worker beside a plain one, would split a key's state).
PINNED = [
    (None, 2654435769), (True, 2388407512), (False, 1123431494), (0, 1123431494),
    (1, 2388407512), (-1, 110113843), (2**63, 2941171558), (2**64 - 1, 110113843),
    (2**70, 2771154679), (-(2**70), 3872843690), (1.5, 253860321), (-0.0, 1123431494),
    (float("inf"), 2971947641), (float("-inf"), 1553781081), (float("nan"), 1810114945),
    ("word", 3287381265), ("the", 0x3C456DE6), ("", 0), ("ünïcödé", 245509067),
    ("日本", 3350711756), ("\ud800", 499426600), ("x" * 300, 457387283), (b"", 1540483477),
    (b"\x00\xff", 923407591), ([1, "a"], 635593788), ((1, "a"), 635593788), ([], 17),
    ({"b": 1, "a": [None, 2.5]}, 3216299068), (["x", ["y", {"z": 3}]], 1960909649),
    ([float("nan"), 1], 2667412296), (frozenset({"a", "b", "c"}), 4149449585),
    ({"w", "x", "y", "z"}, 1632981391),
]
NAN = 1810114945


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


@pytest.mark.parametrize("value, expected", PINNED, ids=[repr(v)[:20] for v, _ in PINNED])
def test_hash_of_each_kind_is_pinned(value, expected):
    assert stable_hash(value) == expected


def test_nan_hashes_the_same_every_time():
    # NaN != NaN, yet every NaN (whatever its sign or payload) must route to one task
    nans = [float("nan"), math.nan, float("inf") - float("inf"), -math.nan,
            float.fromhex("nan"), struct_nan(0x7FF8000000000001)]
    assert [stable_hash(n) for n in nans] == [NAN] * len(nans)
    assert stable_hash([math.nan, 1]) == stable_hash([float("nan"), 1.0]) == 2667412296


def struct_nan(bits: int) -> float:
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def test_none_unicode_bytes():
    assert stable_hash(None) == 2654435769
    assert stable_hash("straße") == stable_hash("stra" + "ße") == zlib.crc32("straße".encode())
    assert stable_hash("日本語") != stable_hash("日本")
    assert stable_hash("\ud800") == 499426600  # lone surrogate: no crash, its surrogatepass bytes
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


def test_picklable_objects_fall_back_to_a_hash_of_their_pickle():
    # deterministic across processes: checked in fresh processes below (keys() has a Point)
    assert stable_hash(Point(1, 2)) == stable_hash(Point(1, 2))
    assert stable_hash(Point(1, 2)) != stable_hash(Point(2, 1))


def test_never_calls_builtin_hash():
    class Salted(str):
        def __hash__(self) -> int:
            raise AssertionError("builtin hash() used")

    assert stable_hash(Salted("k")) == stable_hash("k")


def plain_hashing():
    """hashing.py loaded from its source as plain Python, beside the module this run uses."""
    path = Path(squall.runtime.hashing.__file__).parent / "hashing.py"
    spec = importlib.util.spec_from_file_location("squall_hashing_plain", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not module._COMPILED
    return module


PLAIN = plain_hashing()


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=10,
))
def test_compiled_and_plain_hash_agree_for_any_value(value):
    # PLAIN is hashing.py run as plain Python; ``stable_hash`` is the path this run uses
    # (compiled unless SQUALL_PURE_PYTHON=1, then both are plain and the fresh processes
    # below compare the compiled path)
    assert stable_hash(value) == PLAIN.stable_hash(value)
    assert 0 <= stable_hash(value) < 2**32


# ---- the same hash in other processes and on both paths (E7) -------------------------------


def keys() -> list:
    """The pinned values, and some whose hash is not pinned but must agree everywhere."""
    return [v for v, _ in PINNED] + [Point(1, 2), {frozenset({"a", "b", "c", "d", "e", "f"}): 1},
                                     {"p", "q", "r", "s", "t", "u", "v"}]


SCRIPT = """
import json
import squall._speedups
from squall.runtime.hashing import stable_hash
from tests.unit.test_hashing import keys
print(json.dumps([squall._speedups.STATE, [stable_hash(k) for k in keys()]]))
"""


def hashes_in_subprocess(seed: str, pure: bool) -> tuple[str, list[int]]:
    """The hot path a fresh process ran, and the hashes of ``keys()`` there."""
    env = {**os.environ, "PYTHONHASHSEED": seed, "SQUALL_PURE_PYTHON": "1" if pure else "0"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
    )
    state, hashes = json.loads(out.stdout)
    return state, hashes


@pytest.mark.parametrize("path", ["compiled", "plain"])
def test_same_hash_in_fresh_processes_with_other_hash_seeds_on_each_path(path):
    here = [stable_hash(k) for k in keys()]
    assert here[:len(PINNED)] == [expected for _, expected in PINNED]
    for seed in ("0", "1", "12345", "random"):
        state, there = hashes_in_subprocess(seed, pure=path == "plain")
        if path == "compiled" and state != "compiled":
            pytest.skip(f"no current compiled build ({state}): run `make compile`")
        # plain: "forced" beside a build for this Python, "pure" without one (the second Python's run)
        assert state in (("compiled",) if path == "compiled" else ("forced", "pure"))
        assert there == here, f"{path} path, PYTHONHASHSEED={seed}"


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
