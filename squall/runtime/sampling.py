"""Sampling emitted tuples while a topology is debugged (Storm's event logger).

A ``TupleSampler`` is installed as a worker's ``tap`` (called by the output collectors on
every emit) only while debugging is on; off, the tap is None and an emit costs one ``is
None`` test. It keeps a bounded buffer of samples (component, stream, worker, values,
time, and the emitting task) that the worker's heartbeats drain to the topology master. Values are shown, not
replayed: anything that is not a plain JSON scalar becomes its ``repr``, cut short.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from squall.runtime import clock

MAX_VALUE_CHARS = 300
BUFFER = 1000


def shown(value: Any) -> Any:
    """``value`` as it can be shown: JSON scalars as they are, anything else as a short repr.

    >>> shown("a"), shown(3), shown(None), shown({"k": [1, 2]})
    ('a', 3, None, "{'k': [1, 2]}")
    """
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"


class TupleSampler:
    """The tap of one worker while debugging is on (see the module docstring)."""

    def __init__(self, rate: float, components: Iterable[str] | None, worker: int,
                 rng: random.Random | None = None, time_ms: Callable[[], int] | None = None,
                 limit: int = BUFFER) -> None:
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"the sampling rate must be in (0, 1], got {rate!r}")
        self.rate = rate
        self.components = frozenset(components) if components else None
        self.worker = worker
        self._random = (rng or random.Random()).random
        self._time_ms = time_ms or clock.time_ms
        self.buffer: deque[dict] = deque(maxlen=limit)
        self.dropped = 0  # samples pushed out of a full buffer before a heartbeat took them

    def __call__(self, component: str, stream: str, values: list, task: int) -> None:
        """One emit of ``task`` (called on the emitting task's thread)."""
        if self.components is not None and component not in self.components:
            return
        if self.rate < 1.0 and self._random() >= self.rate:
            return
        if len(self.buffer) == self.buffer.maxlen:
            self.dropped += 1
        self.buffer.append({"component": component, "stream": stream, "task": task, "worker": self.worker,
                            "values": [shown(v) for v in values], "time": self._time_ms() / 1000.0})

    def drain(self) -> list[dict]:
        """The samples taken since the last drain, oldest first."""
        out = []
        while True:
            try:
                out.append(self.buffer.popleft())
            except IndexError:
                return out
