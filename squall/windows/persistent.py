"""``PersistentWindowedBoltExecutor``: a stateful window saved whole by every checkpoint.

Storm's executor of the same name: the window's tuples and its policies' state are saved
with the user's state at each checkpoint, so input tuples are acked once the checkpoint
after them commits, and a restarted task resumes the very same window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from squall.api.components import StatefulBolt
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.windows.events import Event
from squall.windows.executor import WindowedBoltExecutor
from squall.windows.stateful_executor import window_state

if TYPE_CHECKING:
    from squall.api.context import TopologyContext
    from squall.windows.interfaces import IStatefulWindowedBolt

EVENTS_KEY = "events"
SYSTEM_KEY = "system"


class PersistentWindowedBoltExecutor(WindowedBoltExecutor, StatefulBolt):
    """Runs a ``StatefulWindowedBolt`` with persistence: the window is checkpointed."""

    bolt: IStatefulWindowedBolt

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Prepare as a windowed bolt; triggers wait for ``init_state``."""
        self.initialized = False
        self.window_state = window_state(conf, context)
        super().prepare(conf, context, collector)

    def start(self) -> None:
        """Start triggering only once the window is restored."""
        if self.__dict__.get("initialized"):
            super().start()

    def init_state(self, state: Any) -> None:
        """Hand the state to the user and restore the saved window."""
        if self.initialized:
            return
        self.bolt.init_state(state)
        self._restore()
        self.initialized = True
        self.start()

    def execute(self, tup: Tuple) -> None:
        """Add to the window; the ack waits for the next checkpoint to commit."""
        super().execute(tup)
        if not tup.is_tick():
            self.output.ack(tup)

    def on_expiry(self, tuples: list) -> None:
        """Nothing to ack: each tuple was acked at the checkpoint that saved it."""

    def ack_late(self, tup: Tuple) -> None:
        """Nothing here: ``execute`` acks every input once, late or not."""

    def pre_prepare(self, txid: int) -> None:
        """Stage the window's tuples and its policies' state with the user's state."""
        self.bolt.pre_prepare(txid)
        self.window_state.put(EVENTS_KEY, self._snapshot())
        self.window_state.put(SYSTEM_KEY, self._system_state())
        self.window_state.prepare_commit(txid)

    def pre_commit(self, txid: int) -> None:
        """Commit the window with the user's state."""
        self.bolt.pre_commit(txid)
        self.window_state.commit(txid)

    def pre_rollback(self) -> None:
        """Roll the window back to the last commit."""
        self.bolt.pre_rollback()
        self.window_state.rollback()
        if self.initialized:
            self._restore()

    def _snapshot(self) -> list:
        if self.sessions is not None:
            return [[k, _encode(v), ts] for k, ss in self.sessions.sessions.items()
                    for s in ss for v, ts in zip(s.values, s.stamps, strict=True)]
        assert self.manager is not None
        return [[None, _encode(e.value), e.timestamp] for e in self.manager.queue]

    def _system_state(self) -> dict:
        state: dict = {}
        if self.manager is not None:
            state["manager"] = self.manager.get_state()
        if self.watermarks is not None:
            streams: list = [[list(s), ts] for s, ts in self.watermarks.stream_ts.items()]  # type: ignore[call-overload]
            state["watermark"] = [self.watermarks.last_watermark, streams]
        return state

    def _restore(self) -> None:
        events = self.window_state.get(EVENTS_KEY) or []
        system = self.window_state.get(SYSTEM_KEY) or {}
        if self.sessions is not None:
            self.sessions.sessions.clear()
            for key, value, ts in events:
                self.sessions.add(key if not isinstance(key, list) else tuple(key), _decode(value), ts)
        else:
            assert self.manager is not None
            self.manager.queue.clear()
            for _, value, ts in events:
                self.manager.queue.append(Event(_decode(value), ts))
            self.manager.forget_previous()
            if "manager" in system:
                self.manager.restore_state(system["manager"])
        if self.watermarks is not None and "watermark" in system:
            last, streams = system["watermark"]
            self.watermarks.last_watermark = last
            self.watermarks.stream_ts = {tuple(s): ts for s, ts in streams}


def _encode(tup: Tuple) -> list:
    return [list(tup.values), list(tup.fields), tup.component, tup.stream, tup.task]


def _decode(saved: list) -> Tuple:
    values, fields, component, stream, task = saved
    return Tuple(list(values), Fields(*fields), component, stream, task)
