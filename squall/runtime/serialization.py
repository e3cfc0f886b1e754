"""Wire format between workers: msgpack for plain values, pickle for the rest.

A message is ``[target_task, source_task, stream, values, ids]``. Messages are packed one
by one when emitted (so an unserializable value fails at ``emit``, naming the component and
stream) and joined into frames: a 12-byte header (magic, payload length, CRC-32) and the
concatenated messages. A frame whose CRC does not match is dropped whole and counted; its
tuples are replayed by the ackers' timeouts.
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


def _pickle_message(message: list) -> bytes:
    try:
        return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001
        raise SerializationError(f"message cannot be serialized: {e}") from e


def frame(parts: list[bytes]) -> bytes:
    """Join packed messages into one checked frame."""
    payload = b"".join(parts)
    return HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def unframe(data: bytes) -> Iterator[list]:
    """The messages of a frame; raises ``CorruptFrameError`` before yielding any if bad."""
    if len(data) < HEADER.size:
        raise CorruptFrameError(f"frame of {len(data)} bytes is shorter than its header")
    magic, length, crc = HEADER.unpack_from(data)
    if magic != MAGIC or length != len(data) - HEADER.size:
        raise CorruptFrameError("frame header is corrupt (bad magic or length)")
    payload = memoryview(data)[HEADER.size:]
    if zlib.crc32(payload) != crc:
        raise CorruptFrameError("frame payload fails its CRC check")
    unpacker = msgpack.Unpacker(ext_hook=_ext_hook, strict_map_key=False, raw=False,
                                max_buffer_size=MAX_FRAME_BYTES)
    unpacker.feed(payload)
    yield from unpacker  # a message sent whole through pickle comes back a list too
