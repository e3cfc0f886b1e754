"""The two wire formats of Storm's multilang protocol (pure: bytes in, messages out).

JSON (Storm's ``JsonSerializer``): each message is one JSON document followed by a line
``end``. msgpack (pystorm's ``MsgpackSerializer``): messages are consecutive msgpack
objects, delimited by msgpack itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Protocol

import msgpack

SERIALIZER_KEY = "topology.multilang.serializer"
_JSON_NAMES = {"json", "org.apache.storm.multilang.JsonSerializer"}
_MSGPACK_NAMES = {"msgpack", "pystorm.serializers.msgpack_serializer.MsgpackSerializer"}


class Codec(Protocol):
    """Encodes messages to the subprocess and decodes what it writes back."""

    name: str

    def encode(self, message: Any) -> bytes:
        """One message as the bytes to write to the subprocess's stdin."""
        ...

    def feed(self, data: bytes) -> Iterator[Any]:
        """Take bytes read from the subprocess's stdout; yield each message completed."""
        ...


class JsonCodec:
    """Storm's JSON framing: a document, then a line ``end``."""

    name = "json"

    def __init__(self) -> None:
        self._buffer = b""
        self._lines: list[bytes] = []

    def encode(self, message: Any) -> bytes:
        """JSON, UTF-8, then the ``end`` line."""
        try:
            text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            raise TypeError(f"cannot send {message!r} to the subprocess as JSON: {e} "
                            f"(use topology.multilang.serializer: msgpack for bytes)") from None
        return text.encode("utf-8") + b"\nend\n"

    def feed(self, data: bytes) -> Iterator[Any]:
        """Split into lines; a line ``end`` closes the document read so far."""
        self._buffer += data
        while True:
            nl = self._buffer.find(b"\n")
            if nl < 0:
                return
            line, self._buffer = self._buffer[:nl], self._buffer[nl + 1:]
            if line.rstrip(b"\r") == b"end":
                lines, self._lines = self._lines, []
                text = b"\n".join(lines).decode("utf-8").strip()
                if not text:
                    continue  # stray ``end`` lines carry nothing (storm.js skips them too)
                try:
                    yield json.loads(text)
                except ValueError as e:
                    raise ValueError(f"the subprocess wrote something that is not JSON: "
                                     f"{text[:200]!r} ({e})") from None
            else:
                self._lines.append(line)


class MsgpackCodec:
    """pystorm's msgpack framing: one msgpack object per message."""

    name = "msgpack"

    def __init__(self) -> None:
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)

    def encode(self, message: Any) -> bytes:
        """Pack with str and bin types kept apart."""
        return msgpack.packb(message, use_bin_type=True)

    def feed(self, data: bytes) -> Iterator[Any]:
        """Yield every object completed by ``data``."""
        self._unpacker.feed(data)
        yield from self._unpacker


def make_codec(conf: dict) -> Codec:
    """The codec ``topology.multilang.serializer`` names (JSON when unset)."""
    name = conf.get(SERIALIZER_KEY) or "json"
    if name in _JSON_NAMES:
        return JsonCodec()
    if name in _MSGPACK_NAMES:
        return MsgpackCodec()
    raise ValueError(f"{SERIALIZER_KEY}: unknown serializer {name!r} (use 'json' or 'msgpack')")
