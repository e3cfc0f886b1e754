"""Events in a window: a value with its timestamp, or a watermark (Storm's ``Event``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Event:
    """A value (a tuple, in a bolt) and its timestamp in ms; compared by identity."""

    __slots__ = ("value", "timestamp")

    is_watermark = False

    def __init__(self, value: Any, timestamp: int) -> None:
        self.value = value
        self.timestamp = timestamp

    def __repr__(self) -> str:
        return f"Event({self.value!r}, ts={self.timestamp})"


class WaterMarkEvent(Event):
    """A watermark: no tuple older than ``timestamp`` is expected any more."""

    __slots__ = ()

    is_watermark = True

    def __init__(self, timestamp: int) -> None:
        super().__init__(None, timestamp)


class Action(Enum):
    """What an eviction policy says about one event."""

    EXPIRE = "expire"    # leaves the window for good
    PROCESS = "process"  # in the current window
    KEEP = "keep"        # stays queued, not in this window (in the future)
    STOP = "stop"        # stop scanning: nothing after this is decided yet


@dataclass(frozen=True)
class EvictionContext:
    """When a window is evaluated: its reference time and, for some policies, counts."""

    reference_time: int
    current_count: int | None = None
    sliding_count: int | None = None
    sliding_interval: int | None = None
