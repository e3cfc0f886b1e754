"""A worker's record of its rounds, for the tail-latency tool (``python -m benchmarks.rounds``).

Off unless the environment variable ``SQUALL_ROUND_TRACE`` names a directory. Then each
worker keeps its last ``CAPACITY`` rounds: when each began, had taken the arrived frames, had
run its bolt passes and ended (on the round's real clock, ``CLOCK_MONOTONIC`` on Linux,
the clock a spout stamps with), the loop thread's CPU time at its start and end (a round
much longer in real time than in CPU time was not running: its core went to another
thread), the tuples taken, the work of the bolt passes and of the whole round, its
mid-round sends and whether backpressure held the spouts. The worker writes them to
``rounds-<pid>-<worker>.bin`` in that directory when its loop ends (``write``), and
``load`` reads such a file back. A round costs four clock reads and two CPU-time reads more
while it is on, one ``None`` test while it is off.
"""

from __future__ import annotations

import os
import time
from array import array
from pathlib import Path
from typing import NamedTuple

ENV = "SQUALL_ROUND_TRACE"
CAPACITY = 1 << 18  # rounds kept (the last ones; about 23 MB): minutes of a busy loop
FIELDS = 11


class RoundRecord(NamedTuple):
    """One round, times in seconds."""

    begun: float
    received_at: float  # the arrived frames taken
    bolts_at: float  # the bolt passes done
    ended: float
    cpu_begun: float  # the loop thread's CPU time
    cpu_ended: float
    received: int  # tuples taken from frames at the round's start
    bolt_work: int  # tuples the bolt passes handled, with frames taken between their slices
    work: int  # the round's work in all (spouts' emits and the rest included)
    early_sends: int  # sends in the middle of the round (the batch time ran out)
    throttled: bool  # backpressure held the spouts at the round's end


class RoundTrace:
    """The last ``capacity`` rounds of one worker (see the module's docstring)."""

    def __init__(self, directory: str, worker: int, capacity: int = CAPACITY) -> None:
        self.directory = directory
        self.worker = worker
        self.capacity = capacity
        self.data = array("d", bytes(8 * FIELDS * capacity))
        self.count = 0  # rounds recorded since the start (the ring's write position: count % capacity)
        self._cpu = time.thread_time
        self._row = [0.0] * FIELDS

    def begin(self, now: float, early_sends: int) -> None:
        """A round starts."""
        row = self._row
        row[0] = now
        row[4] = self._cpu()
        row[9] = float(early_sends)

    def received(self, now: float, work: int) -> None:
        """The round took the arrived frames: ``work`` tuples."""
        self._row[1] = now
        self._row[6] = float(work)

    def bolts_done(self, now: float, work: int) -> None:
        """The bolt passes are done; ``work``: the round's work so far."""
        self._row[2] = now
        self._row[7] = float(work) - self._row[6]

    def end(self, now: float, work: int, early_sends: int, throttled: bool) -> None:
        """The round ended: keep it."""
        row = self._row
        row[3] = now
        row[5] = self._cpu()
        row[8] = float(work)
        row[9] = float(early_sends) - row[9]
        row[10] = 1.0 if throttled else 0.0
        at = (self.count % self.capacity) * FIELDS
        self.data[at:at + FIELDS] = array("d", row)
        self.count += 1

    def records(self) -> list[RoundRecord]:
        """The rounds kept, oldest first."""
        n = min(self.count, self.capacity)
        first = self.count - n
        out = []
        for k in range(first, self.count):
            at = (k % self.capacity) * FIELDS
            out.append(_record(self.data[at:at + FIELDS]))
        return out

    def write(self) -> Path:
        """Write the rounds kept, oldest first, to ``rounds-<pid>-<worker>.bin``; its path."""
        path = Path(self.directory) / f"rounds-{os.getpid()}-{self.worker}.bin"
        n = min(self.count, self.capacity)
        start = (self.count - n) % self.capacity
        with open(path, "wb") as f:
            if n == self.capacity and start:
                self.data[start * FIELDS:].tofile(f)
                self.data[:start * FIELDS].tofile(f)
            else:
                self.data[start * FIELDS:(start + n) * FIELDS].tofile(f)
        return path


def _record(values: array) -> RoundRecord:
    v = list(values)
    return RoundRecord(v[0], v[1], v[2], v[3], v[4], v[5], int(v[6]), int(v[7]), int(v[8]), int(v[9]),
                       bool(v[10]))


def load(path: str | Path) -> list[RoundRecord]:
    """The rounds a worker wrote to ``path``, oldest first."""
    data = array("d")
    raw = Path(path).read_bytes()
    if len(raw) % (8 * FIELDS):
        raise ValueError(f"{path}: {len(raw)} bytes is not a whole number of rounds of {FIELDS} doubles")
    data.frombytes(raw)
    return [_record(data[i:i + FIELDS]) for i in range(0, len(data), FIELDS)]


def from_environment(worker: int) -> RoundTrace | None:
    """A trace for ``worker`` when ``SQUALL_ROUND_TRACE`` names a directory, else None."""
    directory = os.environ.get(ENV)
    if not directory:
        return None
    os.makedirs(directory, exist_ok=True)
    return RoundTrace(directory, worker)
