"""A windowed bolt's configuration, read and checked once (Storm's ``validate``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from squall.windows import shapes

TICK_KEY = "topology.tick.tuple.freq.secs"


@dataclass(frozen=True)
class WindowConfig:
    """The shape of one windowed bolt, from its (merged) configuration."""

    length_count: int | None = None
    length_ms: int | None = None
    sliding_count: int | None = None
    sliding_ms: int | None = None
    session_gap_ms: int | None = None
    session_key: tuple[str, ...] | None = None
    event_time: bool = False
    lag_ms: int = shapes.DEFAULT_MAX_LAG_MS
    watermark_interval_ms: int = shapes.DEFAULT_WATERMARK_INTERVAL_MS
    late_stream: str | None = None

    @staticmethod
    def from_conf(conf: dict, event_time: bool) -> WindowConfig:
        """Read the window keys; ``ValueError`` with the reason when they do not fit."""
        def num(key: str) -> int | None:
            v = conf.get(key)
            return None if v is None else int(v)

        gap = num(shapes.SESSION_GAP_MS)
        length_count = num(shapes.WINDOW_LENGTH_COUNT)
        length_ms = None if length_count is not None else num(shapes.WINDOW_LENGTH_DURATION_MS)
        sliding_count = num(shapes.SLIDING_INTERVAL_COUNT)
        sliding_ms = None if sliding_count is not None else num(shapes.SLIDING_INTERVAL_DURATION_MS)
        if gap is None:
            if length_count is None and length_ms is None:
                raise ValueError("window length is not specified; call with_window, "
                                 "with_tumbling_window or with_session_window")
            if sliding_count is None and sliding_ms is None:
                sliding_count = 1  # the default: slide with every tuple
        late = conf.get(shapes.LATE_TUPLE_STREAM)
        if late is not None and not event_time:
            raise ValueError("a late tuple stream needs event time: set with_timestamp_field "
                             "or with_timestamp_extractor")
        key = conf.get(shapes.SESSION_KEY_FIELDS)
        return WindowConfig(
            length_count=length_count, length_ms=length_ms, sliding_count=sliding_count,
            sliding_ms=sliding_ms, session_gap_ms=gap,
            session_key=tuple(key) if key else None, event_time=event_time,
            lag_ms=num(shapes.TIMESTAMP_MAX_LAG_MS) or shapes.DEFAULT_MAX_LAG_MS,
            watermark_interval_ms=(num(shapes.WATERMARK_INTERVAL_MS)
                                   or shapes.DEFAULT_WATERMARK_INTERVAL_MS),
            late_stream=late,
        )

    def tick_secs(self) -> float | None:
        """How often the executor needs a tick tuple (None: count windows need none)."""
        if self.event_time:
            return self.watermark_interval_ms / 1000.0
        if self.session_gap_ms is not None:
            # a session closes within a second of its gap (or within the gap, if shorter)
            return min(self.session_gap_ms, 1000) / 1000.0
        if self.sliding_ms is not None:
            return self.sliding_ms / 1000.0
        return None


def with_tick(conf: dict[str, Any], secs: float | None) -> dict[str, Any]:
    """``conf`` asking for ticks at least every ``secs`` (the user's own, if faster, wins)."""
    if secs is None:
        return conf
    user = conf.get(TICK_KEY)
    conf[TICK_KEY] = min(float(user), secs) if user else secs
    return conf
