"""Closures posted to the topology master's loop thread, the only thread that changes its state.

API calls and job threads hand work to the loop through ``LoopCalls``; the loop runs what
is pending once per turn.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

CALL_TIMEOUT = 60.0


class LoopCalls:
    """A queue of closures for one loop thread; ``post`` and ``call`` from any thread."""

    def __init__(self, loop: threading.Thread) -> None:
        self._loop = loop
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def post(self, fn: Callable[[], Any]) -> Future:
        """Queue ``fn`` for the loop thread; the future gets its result or exception."""
        future: Future = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                future.set_exception(e)
        self._queue.put(run)
        return future

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the loop thread and return its result (directly if the loop is not running)."""
        if not self._loop.is_alive():
            return fn()
        return self.post(fn).result(timeout=CALL_TIMEOUT)

    def run_pending(self) -> None:
        """Run every queued closure (on the loop thread)."""
        while True:
            try:
                self._queue.get_nowait()()
            except queue.Empty:
                return
