"""The window manager: queues events and evaluates windows when the trigger says so.

Storm's ``WindowManager``, as a pure state machine: events and watermarks go in through
``add``, and the listener hears ``on_expiry(values)`` when events leave the window for
good and ``on_activation(values, new, expired, reference_time)`` for each evaluated window.
Single-threaded by contract (the bolt task's thread), so it needs no lock.
"""

from __future__ import annotations

from collections import deque
from operator import attrgetter
from typing import Any, Protocol

from squall.runtime import clock
from squall.windows.events import Action, Event
from squall.windows.eviction import CountEvictionPolicy, EvictionPolicy
from squall.windows.triggers import MAX_TS, TriggerPolicy

EXPIRE_EVENTS_THRESHOLD = 100
# The default of ``WindowManager(incremental=...)``; the window tests run with both values.
INCREMENTAL = True
_value = attrgetter("value")
EVICTION_STATE_KEY = "es"
TRIGGER_STATE_KEY = "ts"


class WindowLifecycleListener(Protocol):
    """Hears what the window manager decides."""

    def on_expiry(self, events: list) -> None:
        """``events`` left every window."""

    def on_activation(self, events: list, new: list, expired: list,
                      reference_time: int | None) -> None:
        """A window was evaluated: its events, those new since the last one, those expired."""


class WindowManager:
    """Queues events; on each trigger, expires old ones and activates the window.

    With a count eviction policy on processing time (``CountEvictionPolicy``) every queued
    event that does not expire is in the window, so a trigger expires from the front and
    takes the rest of the queue, and the new events are the last ones added: that costs
    O(slide) in Python plus a C copy of the window, where the general scan asks the policy
    about every queued event and compares the window with the last one, O(window) in Python.
    Both give the same windows (``tests/unit/windows/test_incremental.py``).
    """

    def __init__(self, listener: WindowLifecycleListener, incremental: bool | None = None) -> None:
        self.listener = listener
        # False: the general scan for every policy, which the incremental path must equal
        self.incremental = INCREMENTAL if incremental is None else incremental
        self.queue: deque[Event] = deque()
        self.expired: list = []
        self.previous: set[Event] = set()  # the events of the last window (by identity)
        self.added_since_trigger = 0  # events queued since the last window (count path)
        self.events_since_expiry = 0
        self.eviction: EvictionPolicy
        self.trigger: TriggerPolicy
        self.count_path = False

    def set_policies(self, eviction: EvictionPolicy, trigger: TriggerPolicy) -> None:
        """Set the eviction and trigger policies (before the first ``add``)."""
        self.eviction = eviction
        self.trigger = trigger
        self.count_path = self.incremental and type(eviction) is CountEvictionPolicy

    def add(self, value: Any, timestamp: int | None = None) -> None:
        """Add a value stamped ``timestamp`` (default: now, processing time)."""
        self.add_event(Event(value, clock.time_ms() if timestamp is None else timestamp))

    def add_event(self, event: Event) -> None:
        """Add an event or a watermark (watermarks are not queued, only tracked)."""
        if not event.is_watermark:
            self.queue.append(event)
            self.added_since_trigger += 1
        self.eviction.track(event)
        self.trigger.track(event)
        self.compact()

    def forget_previous(self) -> None:
        """Every queued event counts as new in the next window (after a restore)."""
        self.previous = set()
        self.added_since_trigger = len(self.queue)

    def has_events(self) -> bool:
        """True when some event is queued."""
        return bool(self.queue)

    def on_trigger(self) -> bool:
        """Evaluate the window now; True if it held events."""
        if self.count_path:
            self._expire_count()
            values = list(map(_value, self.queue))  # a C loop: the window's one O(window) step
            added = self.added_since_trigger
            new = values if added >= len(values) else values[len(values) - added:]
            self.added_since_trigger = 0
            expired, self.expired = self.expired, []
        else:
            window = self._scan(full=True)
            expired, self.expired = self.expired, []
            values = [e.value for e in window]
            new = [e.value for e in window if e not in self.previous]
            self.previous = set(window)
        try:
            if values:
                ctx = self.eviction.context
                self.listener.on_activation(values, new, expired,
                                            None if ctx is None else ctx.reference_time)
        finally:  # a bolt that raised must not leave the trigger counting on
            self.trigger.reset()
        return bool(values)

    def compact(self) -> None:
        """Every ``EXPIRE_EVENTS_THRESHOLD`` events, expire what can go (bounded memory)."""
        self.events_since_expiry += 1
        if self.events_since_expiry >= EXPIRE_EVENTS_THRESHOLD:
            if self.count_path:
                self._expire_count()
            else:
                self._scan(full=False)

    def _expire_count(self) -> None:
        """The count policy's scan, without asking it about each event.

        Its ``evict`` expires while more than ``threshold`` events are counted and processes
        the rest, so that many expire from the front.
        """
        eviction = self.eviction
        assert isinstance(eviction, CountEvictionPolicy)
        queue = self.queue
        n = min(eviction.current_count - eviction.threshold, len(queue))
        to_expire: list = []
        if n > 0:
            pop = queue.popleft
            to_expire = [pop().value for _ in range(n)]
            eviction.current_count -= n
        self._expire(to_expire, [])

    def _scan(self, full: bool) -> list[Event]:
        """Expire what can go; a full scan also collects the window (Storm's ``scanEvents``).

        Every event the scan reaches is shown to the eviction policy once, the one that
        stops it included, since some policies count what they are shown.
        """
        to_expire: list = []
        window: list[Event] = []
        kept: deque[Event] = deque()
        queue = self.queue
        evict = self.eviction.evict
        if not full:  # compaction: expire from the front only, without copying the queue
            while queue and evict(queue[0]) is Action.EXPIRE:
                to_expire.append(queue.popleft().value)
            return self._expire(to_expire, [])
        while queue:
            event = queue[0]
            action = evict(event)
            if action is Action.EXPIRE:
                to_expire.append(event.value)
                queue.popleft()
                continue
            if action is Action.STOP:
                break
            if action is Action.PROCESS:
                window.append(event)
            kept.append(queue.popleft())
        kept.extend(queue)
        self.queue = kept
        return self._expire(to_expire, window)

    def _expire(self, to_expire: list, window: list[Event]) -> list[Event]:
        self.expired.extend(to_expire)
        self.events_since_expiry = 0
        if to_expire:
            self.listener.on_expiry(to_expire)
        return window

    def earliest_event_ts(self, start: int, end: int) -> int:
        """The smallest timestamp in (start, end], or ``MAX_TS``."""
        return min((e.timestamp for e in self.queue if start < e.timestamp <= end), default=MAX_TS)

    def event_count(self, reference_time: int) -> int:
        """Queued events at or before ``reference_time``."""
        return sum(1 for e in self.queue if e.timestamp <= reference_time)

    def sliding_count_timestamps(self, start: int, end: int, sliding_count: int) -> list[int]:
        """Timestamps in (start, end] at which every ``sliding_count``-th event falls."""
        out: list[int] = []
        if end > start:
            count = 0
            ts = -MAX_TS
            for e in self.queue:
                if start < e.timestamp <= end:
                    ts = max(ts, e.timestamp)
                    count += 1
                    if count % sliding_count == 0:
                        out.append(ts)
        return out

    def get_state(self) -> dict:
        """The policies' state, for checkpoints."""
        return {EVICTION_STATE_KEY: self.eviction.get_state(),
                TRIGGER_STATE_KEY: self.trigger.get_state()}

    def restore_state(self, state: dict) -> None:
        """Restore what ``get_state`` returned."""
        if state.get(EVICTION_STATE_KEY) is not None:
            self.eviction.restore_state(state[EVICTION_STATE_KEY])
        if state.get(TRIGGER_STATE_KEY) is not None:
            self.trigger.restore_state(state[TRIGGER_STATE_KEY])
