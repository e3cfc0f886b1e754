"""Watermarks for event time (Storm's ``WaterMarkEventGenerator``), without a thread.

The watermark is the smallest, over the input streams, of the latest timestamp seen on
that stream, minus the lag; none is produced until every input stream has delivered. The
executor calls ``run()`` on its tick tuples (every watermark interval).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING

from squall.windows.events import WaterMarkEvent

if TYPE_CHECKING:
    from squall.windows.manager import WindowManager


class WaterMarkEventGenerator:
    """Tracks the latest timestamp per input stream and emits watermarks into a manager."""

    def __init__(self, manager: WindowManager, lag_ms: int, input_streams: Iterable[Hashable]) -> None:
        self.manager = manager
        self.lag_ms = lag_ms
        self.input_streams = set(input_streams)
        self.stream_ts: dict[Hashable, int] = {}
        self.last_watermark = 0

    def track(self, stream: Hashable, ts: int) -> bool:
        """Note ``ts`` on ``stream``; False when the tuple is late (before the last watermark)."""
        current = self.stream_ts.get(stream)
        if current is None or ts > current:
            self.stream_ts[stream] = ts
        return ts >= self.last_watermark

    def compute(self) -> int:
        """The watermark the streams allow now."""
        ts = 0
        if len(self.stream_ts) >= len(self.input_streams):
            ts = min(self.stream_ts.values(), default=0)
        return ts - self.lag_ms

    def run(self) -> None:
        """Add a watermark to the manager if it moved forward."""
        watermark = self.compute()
        if watermark > self.last_watermark:
            self.manager.add_event(WaterMarkEvent(watermark))
            self.last_watermark = watermark
