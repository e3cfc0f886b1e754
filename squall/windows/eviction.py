"""Eviction policies: which queued events are in the window being evaluated (Storm's).

Pure code: no clock is read except the processing-time fallback of ``TimeEvictionPolicy``
(``squall.runtime.clock``, so simulated time drives it).
"""

from __future__ import annotations

from typing import Any

from squall.runtime import clock
from squall.windows.events import Action, Event, EvictionContext

MAX_INT = 2**31 - 1


class EvictionPolicy:
    """Decides, per event, whether it expires, is processed, kept or ends the scan."""

    context: EvictionContext | None = None

    def evict(self, event: Event) -> Action:
        """The action for ``event`` under the current context."""
        raise NotImplementedError

    def track(self, event: Event) -> None:
        """An event (or watermark) was added to the window manager."""

    def set_context(self, context: EvictionContext) -> None:
        """The trigger sets the context of the evaluation that follows."""
        self.context = context

    def reset(self) -> None:
        """Called after each evaluation."""

    def get_state(self) -> Any:
        """What to checkpoint of this policy."""
        return None

    def restore_state(self, state: Any) -> None:
        """Restore what ``get_state`` returned."""


class CountEvictionPolicy(EvictionPolicy):
    """Keeps the last ``threshold`` events."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.current_count = 0

    def evict(self, event: Event) -> Action:
        """Expire while more than ``threshold`` events are queued."""
        if self.current_count > self.threshold:
            self.current_count -= 1
            return Action.EXPIRE
        return Action.PROCESS

    def track(self, event: Event) -> None:
        """Count every event that is not a watermark."""
        if not event.is_watermark:
            self.current_count += 1

    def get_state(self) -> Any:
        """The count of queued events."""
        return self.current_count

    def restore_state(self, state: Any) -> None:
        """Restore the count."""
        self.current_count = int(state)


class TimeEvictionPolicy(EvictionPolicy):
    """Keeps events younger than ``window_length`` ms at the reference time."""

    def __init__(self, window_length: int) -> None:
        self.window_length = window_length
        self.delta = 0

    def evict(self, event: Event) -> Action:
        """Expire old events; keep events after the reference time for later windows."""
        ctx = self.context
        now = clock.time_ms() if ctx is None else ctx.reference_time
        diff = now - event.timestamp
        if diff >= self.window_length + self.delta:
            return Action.EXPIRE
        if diff < 0:  # do not process events beyond the reference time
            return Action.KEEP
        return Action.PROCESS

    def set_context(self, context: EvictionContext) -> None:
        """Adjust the length for drift between evaluations (Storm's ``delta``)."""
        previous = self.context
        self.context = context
        if context.sliding_interval is not None:
            if previous is None:
                self.delta = MAX_INT  # the first window takes every event so far
            else:
                self.delta = (context.reference_time - previous.reference_time
                              - context.sliding_interval)

    def get_state(self) -> Any:
        """The last context, as a list."""
        c = self.context
        return None if c is None else [c.reference_time, c.current_count, c.sliding_count,
                                       c.sliding_interval, self.delta]

    def restore_state(self, state: Any) -> None:
        """Restore the last context."""
        if state is not None:
            ref, current, sliding_count, sliding_interval, delta = state
            self.context = EvictionContext(ref, current, sliding_count, sliding_interval)
            self.delta = delta


class WatermarkTimeEvictionPolicy(TimeEvictionPolicy):
    """Time eviction on event time: the reference time is the watermark's window end."""

    def __init__(self, window_length: int, lag: int = MAX_INT) -> None:
        super().__init__(window_length)
        self.lag = lag

    def evict(self, event: Event) -> Action:
        """Nothing is decided before the first watermark; events beyond the lag stop the scan."""
        ctx = self.context
        if ctx is None:
            return Action.STOP
        diff = ctx.reference_time - event.timestamp
        if diff < -self.lag:
            return Action.STOP
        if diff < 0:
            return Action.KEEP
        return super().evict(event)


class WatermarkCountEvictionPolicy(EvictionPolicy):
    """Count eviction on event time: the last ``threshold`` events up to the reference time."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.current_count = 0
        self.processed = 0

    def evict(self, event: Event) -> Action:
        """Decide among events at or before the reference time only."""
        ctx = self.context
        if ctx is None:
            return Action.STOP
        if event.timestamp <= ctx.reference_time and self.processed < self.current_count:
            if self.current_count > self.threshold:
                self.current_count -= 1
                return Action.EXPIRE
            self.processed += 1
            return Action.PROCESS
        return Action.KEEP

    def set_context(self, context: EvictionContext) -> None:
        """Take the count of events up to the reference time from the context."""
        self.context = context
        if context.current_count is not None:
            self.current_count = context.current_count
        else:
            self.current_count = self.processed + (context.sliding_count or 0)
        self.processed = 0

    def reset(self) -> None:
        """Start counting processed events afresh."""
        self.processed = 0

    def get_state(self) -> Any:
        """(count, processed)."""
        return [self.current_count, self.processed]

    def restore_state(self, state: Any) -> None:
        """Restore (count, processed)."""
        self.current_count, self.processed = int(state[0]), int(state[1])
