"""The topology master's view of its workers: launches, registrations, liveness (pure).

No sockets, threads or Spark here: the master feeds it events (a launch, a registration,
a message, a job's end) with the time from an injectable clock, and asks it what to do
(which workers are dead, which are due for a relaunch). That keeps restart and fencing
rules testable without a cluster.

Fencing: every launch of worker ``i`` gets a new launch number. Only the process that
registered for the current launch (the highest Spark attempt of it) is the worker;
messages from any other are stale and that process is told to stop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from squall.spark.coordination import add_counters

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 10.0
HEALTHY_AFTER = 10.0  # seconds up after which a worker's failure count resets


@dataclass
class Incarnation:
    """One worker process registered with the master."""

    worker: int
    launch: int
    attempt: int
    pid: int
    host: str
    address: str
    identity: bytes
    registered_at: float
    last_seen: float
    started: bool = False
    start_error: str | None = None
    metrics: list[dict] = field(default_factory=list)
    rejected_frames: int = 0  # frames its transport dropped for lacking the topology's secret
    corrupt_frames: int = 0  # frames that failed their CRC or header check (E9)
    transfer: dict = field(default_factory=dict)  # its Worker.transfer_stats() at the last heartbeat
    applied: int = 0  # the last activate/deactivate it confirmed (its seq)
    stuck: list[dict] = field(default_factory=list)  # its tasks stuck in one call, now
    usage: dict = field(default_factory=dict)  # its own RSS and CPU at the last heartbeat (ProcessUsage)
    nonce: bytes = b""  # its transport's end of every link (see ``squall.spark.transport``)
    acked_at: float = float("-inf")  # when the master last acknowledged one of its heartbeats


@dataclass
class Slot:
    """Worker ``index``: its current launch and process, failures and restarts."""

    index: int
    launch: int = 0
    launched_at: float | None = None
    current: Incarnation | None = None
    failures: int = 0
    restarts: int = 0
    relaunch_at: float | None = None
    last_error: str | None = None
    memory_limit_mb: float | None = None  # its current launch's (squall.spark.memory)
    memory_stops: int = 0  # times it was stopped over its memory limit
    memory_stop: str | None = None  # the reason of the last of them


def backoff(failures: int) -> float:
    """Seconds before relaunching a worker that failed ``failures`` times in a row."""
    if failures <= 0:
        return 0.0
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (failures - 1))


class WorkerRegistry:
    """Launches and processes of a topology's workers, and what is due."""

    def __init__(self, num_workers: int, heartbeat_timeout: float, start_timeout: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.slots = [Slot(i) for i in range(num_workers)]
        self.heartbeat_timeout = heartbeat_timeout
        self.start_timeout = start_timeout
        self.clock = clock
        self.by_identity: dict[bytes, Incarnation] = {}
        self.carried: dict[int, dict] = {}  # task -> counters of its dead processes
        self.on_retire: Callable[[Incarnation], None] | None = None  # told of each process retired

    def launched(self, index: int) -> int:
        """Worker ``index`` is being launched again; returns the new launch number."""
        slot = self.slots[index]
        if slot.launch > 0:
            slot.restarts += 1
        slot.launch += 1
        slot.launched_at = self.clock()
        slot.relaunch_at = None
        self._retire(slot)
        return slot.launch

    def register(self, msg: dict, identity: bytes) -> tuple[bool, Incarnation | None]:
        """A process registers; returns (accepted, the process it replaces if any)."""
        slot = self.slots[msg["worker"]]
        current = slot.current
        if msg["launch"] != slot.launch or (current and current.attempt > msg["attempt"]):
            return False, None
        now = self.clock()
        inc = Incarnation(msg["worker"], msg["launch"], msg["attempt"], msg["pid"], msg["host"],
                          msg["address"], identity, now, now, nonce=bytes(msg.get("nonce") or b""))
        self._retire(slot)
        slot.current = inc
        self.by_identity[identity] = inc
        return True, current

    def seen(self, identity: bytes) -> Incarnation | None:
        """A message from ``identity``: its process if it is current (None when stale)."""
        inc = self.by_identity.get(identity)
        if inc is None or self.slots[inc.worker].current is not inc:
            return None
        now = self.clock()
        inc.last_seen = now
        slot = self.slots[inc.worker]
        if slot.failures and inc.started and now - inc.registered_at >= HEALTHY_AFTER:
            slot.failures = 0
        return inc

    def failed(self, index: int, reason: str) -> float:
        """Worker ``index`` died (job ended, or silent); returns the relaunch delay."""
        slot = self.slots[index]
        self._retire(slot)
        slot.failures += 1
        slot.last_error = reason
        delay = backoff(slot.failures)
        slot.relaunch_at = self.clock() + delay
        return delay

    def restart(self, index: int) -> None:
        """Worker ``index`` is being stopped on purpose: relaunch it now, not as a failure."""
        slot = self.slots[index]
        self._retire(slot)
        slot.relaunch_at = self.clock()

    def dead(self) -> list[int]:
        """Workers whose process is silent past the heartbeat timeout, or never registered."""
        now = self.clock()
        out = []
        for slot in self.slots:
            if slot.relaunch_at is not None or slot.launched_at is None:
                continue
            inc = slot.current
            if inc is None:
                if now - slot.launched_at > self.start_timeout:
                    out.append(slot.index)
            elif now - inc.last_seen > self.heartbeat_timeout:
                out.append(slot.index)
        return out

    def due(self) -> list[int]:
        """Workers whose relaunch backoff has passed."""
        now = self.clock()
        return [s.index for s in self.slots if s.relaunch_at is not None and s.relaunch_at <= now]

    def addresses(self) -> dict[int, str]:
        """Worker index -> receive address of its current process."""
        return {s.index: s.current.address for s in self.slots if s.current is not None}

    def nonces(self) -> dict[int, bytes]:
        """Worker index -> transport nonce of its current process."""
        return {s.index: s.current.nonce for s in self.slots if s.current is not None}

    def current(self) -> list[Incarnation]:
        """The current process of every worker that has one."""
        return [s.current for s in self.slots if s.current is not None]

    def _retire(self, slot: Slot) -> None:
        inc = slot.current
        if inc is None:
            return
        for m in inc.metrics:
            add_counters(self.carried.setdefault(m["task"], {}), m)
        self.by_identity.pop(inc.identity, None)
        slot.current = None
        if self.on_retire is not None:
            self.on_retire(inc)
