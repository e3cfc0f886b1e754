"""The runtime's clock: real time, or simulated time that a test advances by hand.

Storm's ``Time``: while a ``SimulatedClock`` is installed (``squall.testing.simulated_time``),
every clock the runtime reads in this process (message timeouts, ticks, checkpoint
intervals, metrics windows, windows on processing time) stands still until the test calls
``advance``. Worker processes started by Spark never simulate.

Code that needs the time calls ``monotonic()`` (seconds, for intervals) or ``time_ms()``
(milliseconds since the epoch, for timestamps); ``sleep(secs)`` waits on the same clock.
A worker takes ``current()`` once when it is built, so the hot path reads a plain callable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["SimulatedClock", "current", "monotonic", "time_ms", "sleep", "simulating",
           "simulated", "install", "uninstall"]

# Simulated epoch: 2020-01-01T00:00:00Z, so simulated timestamps look like real ones.
SIMULATED_EPOCH_MS = 1_577_836_800_000


class SimulatedClock:
    """A clock that moves only when ``advance`` is called; thread-safe."""

    def __init__(self, start: float = 0.0, epoch_ms: int = SIMULATED_EPOCH_MS) -> None:
        # whole microseconds: sums of steps such as 0.1 stay exact
        self._now_us = int(round(start * 1_000_000))
        self._epoch_ms = int(epoch_ms)
        self._cond = threading.Condition()
        self._listeners: list[Callable[[], None]] = []

    def monotonic(self) -> float:
        """Simulated seconds since the clock started."""
        return self._now_us / 1_000_000

    def time_ms(self) -> int:
        """Simulated milliseconds since the epoch."""
        return self._epoch_ms + self._now_us // 1000

    def advance(self, secs: float) -> None:
        """Move the clock ``secs`` forward and wake whoever sleeps or listens."""
        if secs < 0:
            raise ValueError(f"time cannot go back: advance({secs})")
        with self._cond:
            self._now_us += int(round(secs * 1_000_000))
            self._cond.notify_all()
            listeners = list(self._listeners)
        for fn in listeners:
            fn()

    def sleep(self, secs: float, real_timeout: float | None = None) -> bool:
        """Block until the clock has moved ``secs``; False if ``real_timeout`` passed first."""
        with self._cond:
            until = self._now_us + int(round(secs * 1_000_000))
            return self._cond.wait_for(lambda: self._now_us >= until, real_timeout)

    def add_listener(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` (from the advancing thread) after every ``advance``."""
        with self._cond:
            self._listeners.append(fn)

    def remove_listener(self, fn: Callable[[], None]) -> None:
        """Stop calling ``fn``; unknown listeners are ignored."""
        with self._cond:
            if fn in self._listeners:
                self._listeners.remove(fn)


_simulated: SimulatedClock | None = None


def install(clock: SimulatedClock) -> None:
    """Make ``clock`` the process's clock; refused while another one is installed."""
    global _simulated
    if _simulated is not None:
        raise RuntimeError("simulated time is already on in this process")
    _simulated = clock


def uninstall(clock: SimulatedClock) -> None:
    """Return to real time (only the installed clock can be removed)."""
    global _simulated
    if _simulated is clock:
        _simulated = None


def simulating() -> bool:
    """True while simulated time is on."""
    return _simulated is not None


def simulated() -> SimulatedClock | None:
    """The installed simulated clock, or None."""
    return _simulated


def current() -> Callable[[], float]:
    """The monotonic clock to use from now on: the simulated one while it is on."""
    clock = _simulated
    return clock.monotonic if clock is not None else time.monotonic


def monotonic() -> float:
    """Seconds for intervals, on the simulated clock while it is on."""
    clock = _simulated
    return clock.monotonic() if clock is not None else time.monotonic()


def time_ms() -> int:
    """Milliseconds since the epoch, on the simulated clock while it is on."""
    clock = _simulated
    return clock.time_ms() if clock is not None else int(time.time() * 1000)


def sleep(secs: float) -> None:
    """Sleep on the runtime's clock (a simulated sleep ends when time is advanced)."""
    clock = _simulated
    if clock is None:
        time.sleep(secs)
    else:
        clock.sleep(secs)


@contextmanager
def simulation(start: float = 0.0) -> Iterator[SimulatedClock]:
    """Install a fresh simulated clock for the block."""
    clock = SimulatedClock(start)
    install(clock)
    try:
        yield clock
    finally:
        uninstall(clock)
