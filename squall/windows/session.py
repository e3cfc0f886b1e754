"""Session windows (JStorm's): a window per key that closes after ``gap`` ms of silence.

Pure code. ``add(key, value, ts)`` puts an event into its key's session, merging sessions
that the event bridges (out-of-order events on event time); ``close_until(time)`` closes
every session whose last event is at least ``gap`` before ``time`` (processing time: now;
event time: the watermark) and hands each to the listener, oldest first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Session:
    """One open session: its first and last timestamps and its events in arrival order."""

    start: int
    last: int
    values: list[Any] = field(default_factory=list)
    stamps: list[int] = field(default_factory=list)

    def add(self, value: Any, ts: int) -> None:
        """Add one event."""
        self.values.append(value)
        self.stamps.append(ts)
        self.start = min(self.start, ts)
        self.last = max(self.last, ts)


# called with (key, values ordered by timestamp, start ts, end ts = last + gap)
SessionListener = Callable[[Hashable, list, int, int], None]


class SessionWindowManager:
    """Open sessions per key; closes them when the gap has passed."""

    def __init__(self, gap_ms: int, listener: SessionListener) -> None:
        self.gap = gap_ms
        self.listener = listener
        self.sessions: dict[Hashable, list[Session]] = {}

    def add(self, key: Hashable, value: Any, ts: int) -> None:
        """Put an event in its key's session, merging the sessions it bridges."""
        sessions = self.sessions.setdefault(key, [])
        touching = [s for s in sessions if s.start - self.gap < ts < s.last + self.gap]
        merged = Session(ts, ts)
        for s in touching:
            sessions.remove(s)
            for v, t in zip(s.values, s.stamps, strict=True):
                merged.add(v, t)
        merged.add(value, ts)
        sessions.append(merged)

    def close_until(self, time_ms: int) -> int:
        """Close every session whose last event is ``gap`` or more before ``time_ms``."""
        due: list[tuple[int, Hashable, Session]] = []
        for key, sessions in list(self.sessions.items()):
            for s in [s for s in sessions if s.last + self.gap <= time_ms]:
                sessions.remove(s)
                due.append((s.start, key, s))
            if not sessions:
                del self.sessions[key]
        due.sort(key=lambda d: d[0])
        for _, key, s in due:
            order = sorted(range(len(s.values)), key=lambda i: s.stamps[i])
            self.listener(key, [s.values[i] for i in order], s.start, s.last + self.gap)
        return len(due)

    def add_event(self, event: Any) -> None:
        """A watermark (event time): close the sessions it passed."""
        if event.is_watermark:
            self.close_until(event.timestamp)

    def pending(self) -> list[Any]:
        """Every value in an open session."""
        return [v for sessions in self.sessions.values() for s in sessions for v in s.values]
