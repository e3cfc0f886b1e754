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
        # frames a fault dropped, per receiver: its transport tells its worker (``on_loss``),
        # as a sequence gap on a network link would
        self.lost = [0] * workers
        self._lost_lock = threading.Lock()

    def dropped(self, receiver: int) -> None:
        """A frame on its way to worker ``receiver`` was lost (a fault dropped it)."""
        with self._lost_lock:
            self.lost[receiver] += 1

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
        self._lost_seen = 0
        # called with a reason when a frame sent to this worker was lost (set by its Transfer)
        self.on_loss: Callable[[str], None] | None = None

    def send(self, peer: int, frame: bytes) -> bool:
        """Queue ``frame`` for ``peer`` unless its queue is full."""
        hub = self._hub
        q = hub.queues[peer]
        if len(q) >= hub.capacity:
            return False
        if hub.fault is None:
            q.append(frame)
        else:
            frames = hub.fault(self._index, peer, frame)
            if not frames:
                hub.dropped(peer)  # before any later frame of this link is queued
            q.extend(frames)
        hub.events[peer].set()
        return True

    def poll(self, max_frames: int) -> list[bytes]:
        """Take up to ``max_frames`` received frames."""
        q = self._queue
        out: list[bytes] = []
        while q and len(out) < max_frames:
            out.append(q.popleft())
        # after taking the frames: a loss recorded before a frame taken here is seen now
        lost = self._hub.lost[self._index]
        if lost != self._lost_seen:
            self._lost_seen = lost
            if self.on_loss is not None:
                self.on_loss(f"a frame sent to worker {self._index} was lost")
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
