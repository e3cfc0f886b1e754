"""What a worker process measures of itself for its heartbeats: resident memory and CPU.

The scheduler's figures (``resources`` of a worker: the CPU % and memory it *assigned*) say
what a worker may use; these say what its process uses, read by the process itself, so they
hold wherever it runs (Nimbus cannot read ``/proc`` of another host). ``sample()`` gives:

- ``rss_mb``: resident set size now (``/proc/self/statm``; where there is no ``/proc``, the
  peak from ``getrusage``),
- ``cpu_secs``: user + system CPU seconds of the process since it started (every thread),
- ``cpu_percent``: CPU used between the previous sample and this one, as Storm counts CPU:
  100 is one core busy all the time (the first sample covers the time since ``ProcessUsage``
  was made).

Subprocesses (multilang shells) are processes of their own and not counted. Time and the two
readings are injectable, so the arithmetic is tested on simulated time.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """The resident memory of this process now, in bytes."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux, bytes on macOS
        return int(peak if sys.platform == "darwin" else peak * 1024)


def cpu_seconds() -> float:
    """User + system CPU seconds this process used so far (all its threads)."""
    t = os.times()
    return t.user + t.system


class ProcessUsage:
    """Samples of this process's memory and CPU for heartbeats (see the module docstring).

    Called from one thread (the one that builds heartbeats).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 cpu: Callable[[], float] = cpu_seconds, rss: Callable[[], int] = rss_bytes) -> None:
        self._clock, self._cpu, self._rss = clock, cpu, rss
        self._last = (clock(), cpu())

    def sample(self) -> dict:
        """``{"rss_mb", "cpu_secs", "cpu_percent"}`` now (``cpu_percent`` since the last sample)."""
        now, cpu = self._clock(), self._cpu()
        before, cpu_before = self._last
        elapsed = now - before
        percent = 100.0 * (cpu - cpu_before) / elapsed if elapsed > 0 else 0.0
        self._last = (now, cpu)
        return {"rss_mb": round(self._rss() / (1024 * 1024), 1), "cpu_secs": round(cpu, 3),
                "cpu_percent": round(max(0.0, percent), 1)}
