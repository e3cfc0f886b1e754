"""Trigger policies: when a window is evaluated (Storm's), without threads of their own.

Storm's ``TimeTriggerPolicy`` and ``WaterMarkEventGenerator`` run on scheduled threads.
Here the executor calls ``on_tick(now_ms)`` from the bolt's tick tuples instead, so the
worker's one thread and the runtime's clock (real or simulated) drive every window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from squall.runtime import clock
from squall.windows.events import Event, EvictionContext

if TYPE_CHECKING:
    from squall.windows.eviction import EvictionPolicy

MAX_TS = 2**63 - 1
# A time trigger that fell behind (simulated time jumped) evaluates at most this many
# windows that may hold events; later empty periods are skipped in one step.
MAX_CATCH_UP = 10_000


class TriggerHandler(Protocol):
    """What a trigger asks of the window it fires (Storm's ``TriggerHandler``).

    ``WindowManager`` is the one implementation; the policies name this shape so that the
    manager, which owns its policies, is the only one of the two to import the other.
    """

    def on_trigger(self) -> bool:
        """Evaluate the window now; True if it held events."""
        ...

    def has_events(self) -> bool:
        """True when some event is queued."""
        ...

    def event_count(self, reference_time: int) -> int:
        """Queued events at or before ``reference_time``."""
        ...

    def earliest_event_ts(self, start: int, end: int) -> int:
        """The smallest timestamp in (start, end], or ``MAX_TS``."""
        ...

    def sliding_count_timestamps(self, start: int, end: int, sliding_count: int) -> list[int]:
        """Timestamps in (start, end] at which every ``sliding_count``-th event falls."""
        ...


class TriggerPolicy:
    """Decides when the window manager evaluates the window."""

    started = False

    def track(self, event: Event) -> None:
        """An event (or watermark) was added."""

    def reset(self) -> None:
        """Called after each evaluation."""

    def start(self) -> None:
        """Begin triggering."""
        self.started = True

    def on_tick(self, now_ms: int) -> None:
        """The executor's periodic call (tick tuples); only time triggers use it."""

    def get_state(self) -> Any:
        """What to checkpoint of this policy."""
        return None

    def restore_state(self, state: Any) -> None:
        """Restore what ``get_state`` returned."""


class CountTriggerPolicy(TriggerPolicy):
    """Evaluates every ``count`` events (processing time)."""

    def __init__(self, count: int, manager: TriggerHandler, eviction: EvictionPolicy) -> None:
        self.count = count
        self.current_count = 0
        self.manager = manager
        self.eviction = eviction

    def track(self, event: Event) -> None:
        """Count the event; evaluate when ``count`` arrived since the last evaluation."""
        if self.started and not event.is_watermark:
            self.current_count += 1
            if self.current_count >= self.count:
                self.eviction.set_context(EvictionContext(clock.time_ms()))
                self.manager.on_trigger()

    def reset(self) -> None:
        """Start counting afresh."""
        self.current_count = 0

    def get_state(self) -> Any:
        """Events since the last evaluation."""
        return self.current_count

    def restore_state(self, state: Any) -> None:
        """Restore the count."""
        self.current_count = int(state)


class TimeTriggerPolicy(TriggerPolicy):
    """Evaluates every ``duration`` ms of processing time, driven by ``on_tick``.

    Each evaluation's reference time is its due time minus 1 ms (Storm evaluates at
    ``now - 1`` so that tuples arriving during the evaluation belong to the next window).
    A tick a few ms early (clock rounding) still fires the period it belongs to; after a
    jump of several periods every missed period is evaluated, in order.
    """

    def __init__(self, duration: int, manager: TriggerHandler,
                 eviction: EvictionPolicy | None = None) -> None:
        self.duration = duration
        self.manager = manager
        self.eviction = eviction
        self.next_due: int | None = None

    def start(self) -> None:
        """The first window closes one ``duration`` from now."""
        super().start()
        self.next_due = clock.time_ms() + self.duration

    def on_tick(self, now_ms: int) -> None:
        """Evaluate every period that ended by ``now_ms``."""
        if not self.started or self.next_due is None:
            return
        if now_ms < self.next_due - 2 * self.duration:
            # the wall clock went back (a clock step): start counting periods again from now
            self.next_due = now_ms + self.duration
            return
        slack = min(5, self.duration // 2)
        fired = 0
        while now_ms + slack >= self.next_due:
            if fired >= MAX_CATCH_UP or (fired and not self.manager.has_events()):
                periods = max(1, (now_ms + slack - self.next_due) // self.duration + 1)
                self.next_due += periods * self.duration
                break
            self._fire(self.next_due - 1)
            self.next_due += self.duration
            fired += 1

    def _fire(self, reference: int) -> None:
        if self.eviction is not None:
            self.eviction.set_context(EvictionContext(reference, None, None, self.duration))
        self.manager.on_trigger()


class WatermarkCountTriggerPolicy(TriggerPolicy):
    """Event time: evaluates at every ``count``-th event up to each watermark."""

    def __init__(self, count: int, manager: TriggerHandler, eviction: EvictionPolicy) -> None:
        self.count = count
        self.manager = manager
        self.eviction = eviction
        self.last_processed_ts = 0

    def track(self, event: Event) -> None:
        """On a watermark, evaluate once per ``count`` events it passed."""
        if self.started and event.is_watermark:
            for ts in self.manager.sliding_count_timestamps(self.last_processed_ts,
                                                            event.timestamp, self.count):
                self.eviction.set_context(EvictionContext(ts, None, self.count))
                self.manager.on_trigger()
                self.last_processed_ts = ts

    def get_state(self) -> Any:
        """The timestamp of the last evaluation."""
        return self.last_processed_ts

    def restore_state(self, state: Any) -> None:
        """Restore it."""
        self.last_processed_ts = int(state)


class WatermarkTimeTriggerPolicy(TriggerPolicy):
    """Event time: evaluates each window whose end the watermark passed."""

    def __init__(self, sliding_interval: int, manager: TriggerHandler,
                 eviction: EvictionPolicy) -> None:
        self.sliding_interval = sliding_interval
        self.manager = manager
        self.eviction = eviction
        self.next_window_end = 0

    def track(self, event: Event) -> None:
        """On a watermark, evaluate the windows that ended by it."""
        if self.started and event.is_watermark:
            self._on_watermark(event.timestamp)

    def _on_watermark(self, watermark: int) -> None:
        end = self.next_window_end
        while end <= watermark:
            count = self.manager.event_count(end)
            self.eviction.set_context(EvictionContext(end, count))
            if self.manager.on_trigger():
                end += self.sliding_interval
            else:
                # an empty window: jump to the next window end aligned to the interval
                # that holds an event, rather than stepping through empty ones
                nxt = self._next_aligned(end, watermark)
                if nxt == MAX_TS:
                    break
                end = nxt
        self.next_window_end = end

    def _next_aligned(self, start: int, end: int) -> int:
        ts = self.manager.earliest_event_ts(start, end)
        if ts == MAX_TS or ts % self.sliding_interval == 0:
            return ts
        return ts + (self.sliding_interval - ts % self.sliding_interval)

    def get_state(self) -> Any:
        """The end of the next window."""
        return self.next_window_end

    def restore_state(self, state: Any) -> None:
        """Restore it."""
        self.next_window_end = int(state)
