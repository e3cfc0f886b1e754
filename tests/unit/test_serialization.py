"""Wire format (squall/runtime/serialization.py): round trips, errors, corrupt frames (E3, E9)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from squall.runtime.serialization import (
    HEADER,
    CorruptFrameError,
    Encoder,
    SerializationError,
    frame,
    messages_of,
    unframe,
)


@dataclass
class Reading:
    sensor: str
    value: float


class Exploding:
    def __reduce__(self):
        raise RuntimeError("no pickling today")


def message(values, ids=None):
    return [3, 1, "default", values, ids]


def roundtrip(*messages):
    encoder = Encoder()
    return list(unframe(frame([encoder.pack(m) for m in messages])))


VALUES = [
    None, True, False, 0, 1, -1, 2**64 - 1, -(2**63), 2**70, -(2**70), 0.5, -1e308,
    float("inf"), "", "plain", "ünïcödé 日本語 🙂", "\ud800", b"", b"\x00\xff" * 100,
    [], [1, "a", None], {"k": 1}, {1: "int key", 2: [3]}, {"nested": {"list": [1, [2, [3]]]}},
    (1, 2), ((1, "a"), [2]), [(1,)], Reading("t1", 21.5), {1, 2}, OrderedDict(b=1, a=2),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__ + ":" + repr(v)[:20])
def test_every_supported_value_round_trips(value):
    (back,) = roundtrip(message([value]))
    assert back == message([value])
    assert type(back[3][0]) is type(value)


def test_bytearray_crosses_workers_as_bytes():
    # documented: msgpack packs bytearray as bin, so another worker receives bytes
    (back,) = roundtrip(message([bytearray(b"ab")]))
    assert type(back[3][0]) is bytes and back[3][0] == b"ab"


def test_tuple_comes_back_a_tuple_even_nested():
    (back,) = roundtrip(message([{"t": (1, (2, 3))}]))
    inner = back[3][0]["t"]
    assert inner == (1, (2, 3)) and isinstance(inner, tuple) and isinstance(inner[1], tuple)


def test_nan_round_trips():
    (back,) = roundtrip(message([float("nan")]))
    assert back[3][0] != back[3][0]


def test_ids_with_64_bit_roots_round_trip():
    ids = {2**64 - 1: 2**63 + 5, 1: 0}
    (back,) = roundtrip(message(["w"], ids))
    assert back[4] == ids


def test_several_messages_in_one_frame_keep_their_order():
    msgs = [message([i, "x" * i]) for i in range(50)]
    assert roundtrip(*msgs) == msgs


def test_empty_frame_has_no_messages():
    assert list(unframe(frame([]))) == []


def test_message_falling_back_to_pickle_whole_comes_back_a_list():
    msg = message(["\ud800", 2**70, (1,)])  # a surrogate cannot be msgpack'd
    (back,) = roundtrip(msg)
    assert back == msg and isinstance(back, list)


def test_encoder_is_reusable_after_a_fallback():
    encoder = Encoder()
    encoder.pack(message(["\ud800"]))
    packed = encoder.pack(message(["ok"]))
    assert list(unframe(frame([packed]))) == [message(["ok"])]


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=12,
))
def test_any_plain_value_round_trips(value):
    assert roundtrip(message([value])) == [message([value])]


# ---- values that cannot be sent (E3) -------------------------------------------------------


@pytest.mark.parametrize(
    "value, name",
    [(threading.Lock(), "lock"), (lambda x: x, "function"), (Exploding(), "Exploding")],
    ids=["lock", "lambda", "reduce-raises"],
)
def test_unpicklable_value_raises_serialization_error(value, name):
    encoder = Encoder()
    with pytest.raises(SerializationError, match=name):
        encoder.pack(message([value]))
    # the encoder still works afterwards
    assert list(unframe(frame([encoder.pack(message([1]))]))) == [message([1])]


def test_unpicklable_value_in_a_message_that_falls_back_raises_serialization_error():
    with pytest.raises(SerializationError):
        Encoder().pack(message(["\ud800", threading.Lock()]))


def test_serialization_error_is_a_value_error():
    assert issubclass(SerializationError, ValueError)


# ---- corrupt frames (E9) -------------------------------------------------------------------


@pytest.fixture
def good_frame() -> bytes:
    encoder = Encoder()
    return frame([encoder.pack(message(["hello", i])) for i in range(3)])


def flip(data: bytes, i: int) -> bytes:
    return data[:i] + bytes([data[i] ^ 0x40]) + data[i + 1:]


def test_good_frame_unframes(good_frame):
    assert len(list(unframe(good_frame))) == 3


def test_every_flipped_payload_byte_is_detected(good_frame):
    for i in range(HEADER.size, len(good_frame)):
        with pytest.raises(CorruptFrameError):
            list(unframe(flip(good_frame, i)))


@pytest.mark.parametrize("i", [0, 1, 4, 5, 6, 7, 8, 9, 10, 11], ids=lambda i: f"byte{i}")
def test_flipped_header_byte_is_detected(good_frame, i):
    # bytes 2 and 3 are padding, which carries no information
    with pytest.raises(CorruptFrameError):
        list(unframe(flip(good_frame, i)))


@pytest.mark.parametrize("keep", [0, 5, HEADER.size - 1, HEADER.size, -1, -7])
def test_truncated_frame_is_detected(good_frame, keep):
    with pytest.raises(CorruptFrameError):
        list(unframe(good_frame[:keep]))


def test_trailing_garbage_is_detected(good_frame):
    with pytest.raises(CorruptFrameError, match="length"):
        list(unframe(good_frame + b"\x00"))


def test_corrupt_frame_yields_nothing_before_raising(good_frame):
    bad = good_frame[:-1] + bytes([good_frame[-1] ^ 1])
    got = []
    with pytest.raises(CorruptFrameError, match="CRC"):
        for m in unframe(bad):
            got.append(m)
    assert got == []



def _raw_frame(payload: bytes) -> bytes:
    import zlib

    from squall.runtime.serialization import MAGIC
    return HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def test_a_frame_is_one_msgpack_array_of_its_messages():
    import msgpack

    encoder = Encoder()
    data = frame([encoder.pack(message([i])) for i in range(3)])
    assert msgpack.unpackb(data[HEADER.size:]) == [message([i]) for i in range(3)]


@pytest.mark.parametrize("payload", [
    bytes([0x92]) + Encoder().pack(message(["cut short"])) + b"",  # says 2 messages, holds 1
    bytes([0x91]) + Encoder().pack(message(["cut short"]))[:-1],  # the last message cut
    bytes([0x91]) + Encoder().pack(message([1])) + b"\xc0",  # a byte after the array
    b"\xc1",  # never used in msgpack
], ids=["count", "cut", "extra", "invalid"])
def test_a_frame_with_a_good_crc_but_a_bad_payload_is_corrupt(payload):
    # not noise (the CRC holds) but a sender's bug: dropped and counted like noise
    with pytest.raises(CorruptFrameError, match="not a list of messages"):
        messages_of(_raw_frame(payload))


def test_a_frame_of_batches_sends_values_msgpack_refuses_through_pickle():
    batches = [[3, 1, "default", [["ok", 1], [2**70], ["\ud800", 2.5]], None],
               [4, 1, "s", [[None]], [7, 9]]]
    back = messages_of(Encoder().pack_frame(batches))
    assert back == batches
    assert type(back[0][3][1][0]) is int


def test_a_frame_with_a_value_that_cannot_be_pickled_raises_serialization_error():
    encoder = Encoder()
    with pytest.raises(SerializationError, match="Exploding"):
        encoder.pack_frame([[3, 1, "default", [[1], [Exploding()]], None]])
    assert messages_of(encoder.pack_frame([[3, 1, "default", [[1]], None]])) == [
        [3, 1, "default", [[1]], None]]  # still usable
