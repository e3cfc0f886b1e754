"""Commands for a worker's loop thread from other threads (the master, a test, a task).

A command is a function run on the loop thread between rounds (``run``), so it may touch
what the loop owns (spouts' activation, the tasks' state) without a lock. ``call`` returns an
event set once it ran, or once the loop ended without running it (``release``): a stopped
worker calls no user code any more.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any


class Commands:
    """The queue of commands for one loop thread; ``wake`` ends the loop's wait."""

    def __init__(self, wake: Callable[[], None], closed: threading.Event) -> None:
        self.queue: deque[tuple[Callable[[], None], threading.Event]] = deque()
        self._wake = wake
        self.closed = closed  # set once the loop has ended: commands are released, not run

    def call(self, fn: Callable[[], None]) -> threading.Event:
        """Run ``fn`` on the loop thread at the start of the next round."""
        done = threading.Event()
        self.queue.append((fn, done))
        if self.closed.is_set():
            self.release()
        self._wake()
        return done

    def query(self, fn: Callable[[], Any], timeout: float | None, who: str) -> Any:
        """``fn()`` computed on the loop thread; ``TimeoutError`` (naming ``who``) if it did not run."""
        result: list[Any] = []
        if not self.call(lambda: result.append(fn())).wait(timeout) or not result:
            raise TimeoutError(f"{who} did not answer within {timeout}s")
        return result[0]

    def run(self) -> None:
        """On the loop thread: run the commands queued so far."""
        queue = self.queue
        while queue:
            fn, done = queue.popleft()
            try:
                fn()
            finally:
                done.set()

    def release(self) -> None:
        """Set the events of commands that will never run."""
        while self.queue:
            self.queue.popleft()[1].set()
