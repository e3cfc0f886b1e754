r"""A local server that answers each request after a fixed delay, and clients for it.

The I/O-bound workload (``iowait``) waits on it once per sentence, as a topology that
enriches tuples from a database or an HTTP service does. Protocol: the client sends
``<id>\n``; about ``delay_ms`` later the server sends ``<id>\n`` back. Requests are
answered concurrently (one asyncio task each), so the server is never the bottleneck.
``python -m benchmarks.peers._delay DELAY_MS`` serves on 127.0.0.1 and prints its port.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import socket
import subprocess
import sys
from typing import Any

DELAY_MS = 5.0
_server: subprocess.Popen | None = None


async def _serve(delay_s: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def answer(line: bytes) -> None:
            await asyncio.sleep(delay_s)
            writer.write(line)

        pending = set()
        while line := await reader.readline():
            task = asyncio.ensure_future(answer(line))
            pending.add(task)
            task.add_done_callback(pending.discard)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=1 << 20)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def start_server(delay_ms: float = DELAY_MS) -> int:
    """Start the server in a subprocess (once per process); its port."""
    global _server
    if _server is None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        _server = subprocess.Popen([sys.executable, "-m", "benchmarks.peers._delay", str(delay_ms)],
                                   stdout=subprocess.PIPE, text=True, cwd=root)
        atexit.register(_server.kill)
        assert _server.stdout is not None
        _server.port = int(_server.stdout.readline())  # type: ignore[attr-defined]
    return int(_server.port)  # type: ignore[attr-defined]


class DelayClient:
    """A blocking client: one request at a time on one connection."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")
        self.ids = itertools.count()

    def ask(self) -> None:
        """Send one request and wait for its answer."""
        self.sock.sendall(b"%d\n" % next(self.ids))
        self.file.readline()


class AsyncDelayClient:
    """An asyncio client: many requests in flight on one connection, matched by id."""

    def __init__(self) -> None:
        self.waiting: dict[bytes, asyncio.Future] = {}
        self.ids = itertools.count()
        self.writer: Any = None

    async def connect(self, port: int) -> None:
        """Open the connection and start reading answers."""
        reader, self.writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        self._reader = asyncio.ensure_future(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            future = self.waiting.pop(line, None)
            if future is not None and not future.done():
                future.set_result(None)

    async def ask(self) -> None:
        """Send one request and wait for its answer (others may be in flight)."""
        key = b"%d\n" % next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.waiting[key] = future
        self.writer.write(key)
        await future


if __name__ == "__main__":
    asyncio.run(_serve(float(sys.argv[1]) / 1000.0))
