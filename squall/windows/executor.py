"""``WindowedBoltExecutor``: the bolt that runs a ``WindowedBolt`` (Storm's, same name).

It keeps the window manager (or, for session windows, the session manager), feeds it
the input tuples, and drives time from tick tuples: on processing time each tick lets
the time trigger evaluate the windows that ended; on event time each tick computes a
watermark. So a window needs no thread of its own, and simulated time moves it in tests.

Acking: a tuple is acked when it leaves every window (on expiry); a late tuple is acked
at once (after going to the late stream, if there is one).

Anchoring: an emit without anchors joins the tree of every spout tuple behind the window.
With XOR acking the outcome of a tree does not depend on how many of its tuples the emit is
anchored to, only on which trees it joins (each window tuple is in its trees already and is
acked on expiry). So on count windows (first in, first out) the executor keeps, per tree
root, the newest window tuple of that root, updated from each window's new and expired
tuples, and anchors to those: O(slide) per window to keep, one anchor per tree instead of
one per tuple. Other windows anchor to every tuple.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from squall.api.components import Bolt, OutputFieldsDeclarer
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.runtime import clock
from squall.runtime.checkpoint import CHECKPOINT_STREAM
from squall.windows import shapes
from squall.windows.collector import WindowedOutputCollector
from squall.windows.config import WindowConfig, with_tick
from squall.windows.eviction import (
    CountEvictionPolicy,
    EvictionPolicy,
    TimeEvictionPolicy,
    WatermarkCountEvictionPolicy,
    WatermarkTimeEvictionPolicy,
)
from squall.windows.manager import WindowManager
from squall.windows.session import SessionWindowManager
from squall.windows.triggers import (
    CountTriggerPolicy,
    TimeTriggerPolicy,
    TriggerPolicy,
    WatermarkCountTriggerPolicy,
    WatermarkTimeTriggerPolicy,
)
from squall.windows.watermarks import WaterMarkEventGenerator
from squall.windows.window import TupleWindow

if TYPE_CHECKING:
    from squall.api.context import TopologyContext
    from squall.windows.interfaces import IWindowedBolt

log = logging.getLogger("squall.windows")


class WindowedBoltExecutor(Bolt):
    """Runs a ``WindowedBolt``: windows in, ``execute(window)`` out."""

    anchor_to_window = True
    # a stateful window's state is the window, not keys: kept per task, not by key group
    keyed_state = False

    def __init__(self, bolt: IWindowedBolt) -> None:
        self.bolt = bolt
        self.timestamp_extractor = bolt.get_timestamp_extractor()

    # ---- building ----------------------------------------------------------------------

    def get_component_configuration(self) -> dict | None:
        """The user's configuration, the window's keys, and the ticks the window needs."""
        conf = dict(self.bolt.get_component_configuration() or {})
        conf.update(self.bolt.get_window_configuration())
        try:
            window = WindowConfig.from_conf(conf, self.timestamp_extractor is not None)
        except ValueError as e:
            from squall.api.errors import InvalidTopologyError

            raise InvalidTopologyError(f"{type(self.bolt).__name__}: {e}") from None
        return with_tick(conf, window.tick_secs())

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The late tuple stream (if any), then the user's streams."""
        late = self.bolt.get_window_configuration().get(shapes.LATE_TUPLE_STREAM)
        if late is not None:
            declarer.declare(Fields(shapes.LATE_TUPLE_FIELD), stream=late)
        self.bolt.declare_output_fields(declarer)

    # ---- running -----------------------------------------------------------------------

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Prepare the user's bolt, then build the window from the configuration."""
        self.context = context
        self.output = collector
        self.collector = WindowedOutputCollector(collector, self.anchor_to_window)
        self.bolt.prepare(conf, context, self.collector)
        self.window = WindowConfig.from_conf(conf, self.timestamp_extractor is not None)
        self.manager: WindowManager | None = None
        self.sessions: SessionWindowManager | None = None
        self.watermarks: WaterMarkEventGenerator | None = None
        self.trigger: TriggerPolicy | None = None
        self.eviction: EvictionPolicy | None = None
        if self.window.session_gap_ms is not None:
            self.sessions = SessionWindowManager(self.window.session_gap_ms, self._on_session)
            target: Any = self.sessions
        else:
            self.manager = self._new_manager()
            target = self.manager
        # the newest window tuple of each tree root (count windows of this class only: the
        # stateful executors keep their own bookkeeping of the window)
        self.root_anchors: dict[int, Tuple] | None = (
            {} if self.manager is not None and self.manager.count_path
            and type(self) is WindowedBoltExecutor else None)
        if self.window.event_time:
            streams = [s for s in context.get_this_sources() if s[1] != CHECKPOINT_STREAM]
            self.watermarks = WaterMarkEventGenerator(target, self.window.lag_ms, streams)
        self.start()

    def _new_manager(self) -> WindowManager:
        w = self.window
        manager = WindowManager(self)
        eviction: EvictionPolicy
        if w.length_count is not None:
            eviction = (WatermarkCountEvictionPolicy(w.length_count) if w.event_time
                        else CountEvictionPolicy(w.length_count))
        else:
            assert w.length_ms is not None
            eviction = (WatermarkTimeEvictionPolicy(w.length_ms, w.lag_ms) if w.event_time
                        else TimeEvictionPolicy(w.length_ms))
        trigger: TriggerPolicy
        if w.sliding_count is not None:
            trigger = (WatermarkCountTriggerPolicy(w.sliding_count, manager, eviction)
                       if w.event_time else CountTriggerPolicy(w.sliding_count, manager, eviction))
        else:
            assert w.sliding_ms is not None
            trigger = (WatermarkTimeTriggerPolicy(w.sliding_ms, manager, eviction)
                       if w.event_time else TimeTriggerPolicy(w.sliding_ms, manager, eviction))
        manager.set_policies(eviction, trigger)
        self.eviction, self.trigger = eviction, trigger
        return manager

    def start(self) -> None:
        """Start triggering (the stateful executors wait until recovery is over)."""
        if self.trigger is not None and not self.trigger.started:
            self.trigger.start()

    def execute(self, tup: Tuple) -> None:
        """A tick moves time; any other tuple enters the window (or the late stream)."""
        if tup.is_tick():
            self.on_tick()
            return
        self.add(tup)

    def on_tick(self) -> None:
        """Watermarks on event time; due windows and sessions on processing time."""
        if self.watermarks is not None:
            self.watermarks.run()
            return
        now = clock.time_ms()
        if self.sessions is not None:
            self.sessions.close_until(now)
        elif self.trigger is not None:
            self.trigger.on_tick(now)

    def add(self, tup: Tuple) -> None:
        """Put ``tup`` in the window, stamped with its event time or now."""
        if self.timestamp_extractor is None:
            self._add(tup, clock.time_ms())
            return
        ts = self.timestamp_extractor(tup)
        assert self.watermarks is not None
        if self.watermarks.track((tup.component, tup.stream), ts):
            self._add(tup, ts)
            return
        late = self.window.late_stream
        if late is not None:
            self.collector.emit([list(tup.values)], anchors=tup, stream=late)
        else:
            log.info("late tuple %r (ts %d, watermark %d) dropped", tup, ts,
                     self.watermarks.last_watermark)
        self.ack_late(tup)

    def ack_late(self, tup: Tuple) -> None:
        """A late tuple is done at once."""
        self.output.ack(tup)

    def _add(self, tup: Tuple, ts: int) -> None:
        if self.sessions is not None:
            self.sessions.add(self._session_key(tup), tup, ts)
        else:
            assert self.manager is not None
            self.manager.add(tup, ts)

    def _session_key(self, tup: Tuple) -> Any:
        key = self.window.session_key
        if key is None:
            return None
        values = tup.select(Fields(*key))
        return values[0] if len(values) == 1 else tuple(values)

    # ---- what the window manager says -------------------------------------------------

    def on_expiry(self, tuples: list) -> None:
        """Tuples left every window: ack them."""
        roots = self.root_anchors
        if roots is not None:
            for tup in tuples:
                # first in, first out: when a root's newest tuple leaves, all of its have left
                for root in _roots(tup):
                    if roots.get(root) is tup:
                        del roots[root]
        for tup in tuples:
            self.output.ack(tup)

    def on_activation(self, tuples: list, new: list, expired: list,
                      reference_time: int | None) -> None:
        """A window was evaluated: hand it to the user's ``execute``."""
        start = None
        if reference_time is not None and self.window.length_ms is not None:
            start = reference_time - self.window.length_ms
        roots = self.root_anchors
        if roots is None:
            self.collector.set_context(tuples)
        else:
            for tup in new:
                for root in _roots(tup):
                    roots[root] = tup
            self.collector.set_context(list(roots.values()))
        try:
            self.bolt.execute(TupleWindow(tuples, new, expired, start, reference_time))
        finally:
            self.collector.set_context(None)

    def _on_session(self, key: Any, tuples: list, start: int, end: int) -> None:
        self.collector.set_context(tuples)
        try:  # a session is new as a whole and evaluated once: nothing expired from it
            self.bolt.execute(TupleWindow(tuples, tuples, [], start, end))
        finally:
            self.collector.set_context(None)
            self.on_expiry(tuples)

    def cleanup(self) -> None:
        """Clean up the user's bolt."""
        self.bolt.cleanup()


def _roots(tup: Any) -> Any:
    """The roots of the trees ``tup`` belongs to (none when it is not tracked)."""
    n = tup._nroots
    if n == 1:
        return (tup._root,)
    if n == 0:
        return ()
    return tup._idmap
