"""How workers hand frames to each other: the interface, and the in-process hub."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol


class Transport(Protocol):
    """One worker's link to its peers. ``send`` never blocks: False means the peer is full."""

    def send(self, peer: int, frame: bytes) -> bool:
        """Queue ``frame`` for worker ``peer``; False when it cannot take more now."""
        ...

    def poll(self, max_frames: int) -> list[bytes]:
        """Frames received for this worker, at most ``max_frames``."""
        ...

    def wait(self, timeout: float) -> None:
        """Block until a frame arrives, ``wake`` is called, or ``timeout`` seconds pass."""
        ...

    def wake(self) -> None:
        """Make a ``wait`` in progress return now."""
        ...

    def close(self) -> None:
        """Release the link."""
        ...


class InProcessHub:
    """Bounded frame queues between the workers of one process (LocalCluster).

    Frames are real serialized bytes, so what fails to serialize between workers on a
    cluster fails the same way here.
    """

    def __init__(self, workers: int, capacity_frames: int = 64) -> None:
        self.capacity = max(1, capacity_frames)
        self.queues: list[deque[bytes]] = [deque() for _ in range(workers)]
        self.events = [threading.Event() for _ in range(workers)]
        # for fault tests (squall.testing.faults): (sender, receiver, frame) -> the frames
        # that arrive instead: [] drops it, two copies duplicate it, other bytes corrupt it
        self.fault: Callable[[int, int, bytes], list[bytes]] | None = None

    def endpoint(self, worker: int) -> InProcessTransport:
        """The transport of worker ``worker``."""
        return InProcessTransport(self, worker)


class InProcessTransport:
    """A worker's end of an ``InProcessHub``."""

    def __init__(self, hub: InProcessHub, worker: int) -> None:
        self._hub = hub
        self._index = worker
        self._queue = hub.queues[worker]
        self._event = hub.events[worker]

    def send(self, peer: int, frame: bytes) -> bool:
        """Queue ``frame`` for ``peer`` unless its queue is full."""
        hub = self._hub
        q = hub.queues[peer]
        if len(q) >= hub.capacity:
            return False
        if hub.fault is None:
            q.append(frame)
        else:
            q.extend(hub.fault(self._index, peer, frame))
        hub.events[peer].set()
        return True

    def poll(self, max_frames: int) -> list[bytes]:
        """Take up to ``max_frames`` received frames."""
        q = self._queue
        out: list[bytes] = []
        while q and len(out) < max_frames:
            out.append(q.popleft())
        return out

    def waiting(self) -> bool:
        """True while frames sent to this worker wait to be polled (for quiet checks)."""
        return bool(self._queue)

    def wait(self, timeout: float) -> None:
        """Sleep until a frame or a wake-up arrives, at most ``timeout`` seconds."""
        if not self._queue:
            self._event.wait(timeout)
        self._event.clear()

    def wake(self) -> None:
        """Interrupt ``wait``."""
        self._event.set()

    def close(self) -> None:
        """Nothing to release in process."""
