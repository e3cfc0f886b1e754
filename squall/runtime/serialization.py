"""Wire format between workers: msgpack for plain values, pickle for the rest.

A frame is a 12-byte header (magic, payload length, CRC-32) and a payload that is a
msgpack array of messages. The worker's messages are batches,
``[target_task, source_task, stream, [values, ...], ids, others]``: the tuples one task
sent another on one stream since the last flush, packed with the whole frame in one call
(``Encoder.pack_frame``); ``ids`` is None when none is tracked, else a bytes string of two
little-endian 64-bit ints per tuple (root, edge), and ``others`` maps the index of each
tuple that is untracked or of several trees to None or its ``{root: edge}`` map (see
``squall.runtime.worker._Batch``). A frame whose CRC does not match, or whose payload
is not such an array, is dropped whole and counted; its tuples are replayed by the
ackers' timeouts.
"""

from __future__ import annotations

import pickle
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import msgpack

PICKLE_EXT = 1
MAGIC = 0x5351  # "SQ"
HEADER = struct.Struct("<HxxII")  # magic, 2 pad bytes, payload length, crc32
MAX_FRAME_BYTES = 256 * 1024 * 1024
_array_header = msgpack.Packer(autoreset=True).pack_array_header


class SerializationError(ValueError):
    """A value could not be serialized for another worker."""


class TupleTooLargeError(SerializationError):
    """A tuple for another worker is larger than ``squall.max.tuple.bytes``."""


class CorruptFrameError(ValueError):
    """A frame failed its header or CRC check."""


def _default(obj: Any) -> msgpack.ExtType:
    try:
        return msgpack.ExtType(PICKLE_EXT, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception as e:  # noqa: BLE001 - pickling can fail with any exception type
        raise SerializationError(f"{type(obj).__name__} value cannot be serialized: {e}") from e


def _ext_hook(code: int, data: bytes) -> Any:
    if code == PICKLE_EXT:
        return pickle.loads(data)
    return msgpack.ExtType(code, data)


class Encoder:
    """Packs messages; one per sending thread (it reuses its packer)."""

    def __init__(self) -> None:
        # strict_types: a tuple must come back a tuple, so it goes through pickle
        self._packer = msgpack.Packer(default=_default, strict_types=True, autoreset=True)

    def pack(self, message: list) -> bytes:
        """Bytes of one message; raises ``SerializationError`` naming the cause."""
        try:
            return self._packer.pack(message)
        except SerializationError:
            self._packer = msgpack.Packer(default=_default, strict_types=True, autoreset=True)
            raise
        except (OverflowError, ValueError, TypeError):
            # e.g. an int beyond 64 bits: send the whole message through pickle
            self._packer = msgpack.Packer(default=_default, strict_types=True, autoreset=True)
            return self._packer.pack(msgpack.ExtType(PICKLE_EXT, _pickle_message(message)))


    def pack_frame(self, batches: list) -> bytes:
        """One checked frame whose payload is ``batches`` packed in one call.

        A value msgpack cannot take as it is (an int beyond 64 bits, a str with lone
        surrogates) makes its whole values list travel through pickle, as ``pack`` does for
        a message; raises ``SerializationError`` if even that fails.
        """
        try:
            payload = self._packer.pack(batches)
        except (OverflowError, ValueError, TypeError):  # SerializationError is a ValueError
            self._packer = msgpack.Packer(default=_default, strict_types=True, autoreset=True)
            payload = self._packer.pack([_pickled_values(b) for b in batches])
        return HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def _pickled_values(batch: list) -> list:
    """``batch`` with each values list that msgpack refuses sent through pickle instead."""
    check = msgpack.Packer(default=_default, strict_types=True, autoreset=True)
    values = []
    for v in batch[3]:
        try:
            check.pack(v)
        except SerializationError:
            raise
        except (OverflowError, ValueError, TypeError):
            check = msgpack.Packer(default=_default, strict_types=True, autoreset=True)
            v = msgpack.ExtType(PICKLE_EXT, _pickle_message(v))
        values.append(v)
    return [*batch[:3], values, *batch[4:]]


def _pickle_message(message: list) -> bytes:
    try:
        return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001
        raise SerializationError(f"message cannot be serialized: {e}") from e


def frame(parts: list[bytes]) -> bytes:
    """Join packed messages into one checked frame (their payload is one msgpack array)."""
    head = _array_header(len(parts))
    body = b"".join(parts)
    crc = zlib.crc32(body, zlib.crc32(head))
    return b"".join((HEADER.pack(MAGIC, len(head) + len(body), crc), head, body))


def _payload(data: bytes) -> memoryview:
    """The checked payload of a frame; raises ``CorruptFrameError`` if it is bad."""
    if len(data) < HEADER.size:
        raise CorruptFrameError(f"frame of {len(data)} bytes is shorter than its header")
    magic, length, crc = HEADER.unpack_from(data)
    if magic != MAGIC or length != len(data) - HEADER.size:
        raise CorruptFrameError("frame header is corrupt (bad magic or length)")
    payload = memoryview(data)[HEADER.size:]
    if zlib.crc32(payload) != crc:
        raise CorruptFrameError("frame payload fails its CRC check")
    return payload


def messages_of(data: bytes) -> list:
    """The messages of a frame; raises ``CorruptFrameError`` if the frame is bad.

    One ``unpackb`` call for the whole frame: a streaming ``Unpacker`` per frame zeroes a
    large object, which cost more than unpacking a small frame.
    """
    payload = _payload(data)
    try:
        messages = msgpack.unpackb(payload, ext_hook=_ext_hook, strict_map_key=False, raw=False)
    except CorruptFrameError:
        raise
    except (ValueError, msgpack.UnpackException) as e:  # ExtraData, FormatError, StackError...
        raise CorruptFrameError(f"frame payload is not a list of messages: {e}") from None
    if type(messages) is not list:
        raise CorruptFrameError("frame payload is not a list of messages")
    return messages  # a message sent whole through pickle comes back a list too


def unframe(data: bytes) -> Iterator[list]:
    """The messages of a frame; raises ``CorruptFrameError`` before yielding any if bad."""
    yield from messages_of(data)
