"""``StatefulWindowedBoltExecutor``: runs a ``StatefulWindowedBolt`` without persistence.

The window itself lives in memory; checkpoints save, per source task and stream, the
highest message id that expired and that was evaluated (``stateful.py`` tells the whole
story). ``window_state`` is the task's window state, which the persistent executor uses too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from squall.api.components import StatefulBolt
from squall.api.errors import InvalidTopologyError
from squall.api.tuple import Tuple
from squall.windows import shapes
from squall.windows.executor import WindowedBoltExecutor

if TYPE_CHECKING:
    from squall.api.context import TopologyContext
    from squall.windows.interfaces import IStatefulWindowedBolt

STREAM_STATE_SUFFIX = "$window"
_MIN = -(2**63)  # Storm's Long.MIN_VALUE: nothing expired or evaluated yet


def window_state(conf: dict, context: TopologyContext) -> Any:
    """The task's window state: beside its user state, in a namespace of its own."""
    from squall.runtime.stateful import state_namespace
    from squall.state import load_provider

    namespace = state_namespace(context.topology_name, context.component_id,
                                context.get_this_task_index(), 0) + STREAM_STATE_SUFFIX
    return load_provider(conf).new_state(namespace, conf, context)


class StatefulWindowedBoltExecutor(WindowedBoltExecutor, StatefulBolt):
    """Runs a ``StatefulWindowedBolt`` without persistence (message ids required)."""

    bolt: IStatefulWindowedBolt

    def get_component_configuration(self) -> dict | None:
        """As the windowed executor's; the message id field is required here."""
        conf = super().get_component_configuration() or {}
        if not conf.get(shapes.MESSAGE_ID_FIELD):
            raise InvalidTopologyError(
                f"{type(self.bolt).__name__}: a stateful windowed bolt needs "
                f"with_message_id_field(name) (or with_persistence())"
            )
        return conf

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Prepare as a windowed bolt; triggers wait for ``init_state`` and recovery."""
        self.msg_id_field = conf[shapes.MESSAGE_ID_FIELD]
        self.initialized = False
        self.pre_prepared = False
        self.recovery: dict[tuple, list[int]] = {}
        self.pending_tuples: list[Tuple] = []
        self.stream_state = window_state(conf, context)
        super().prepare(conf, context, collector)

    def start(self) -> None:
        """Start triggering only once initialised and recovered."""
        if self.__dict__.get("initialized") and not self.recovery:
            super().start()

    def init_state(self, state: Any) -> None:
        """Hand the state to the user, then find what to recover per source task-stream."""
        if self.initialized:
            return
        self.bolt.init_state(state)
        for component, stream in self.context.get_this_sources():
            for task in self.context.get_component_tasks(component):
                saved = self.stream_state.get([task, component, stream])
                if saved is not None:
                    self.recovery[(task, component, stream)] = list(saved)
        self.initialized = True
        self.start()

    def execute(self, tup: Tuple) -> None:
        """Recover replayed tuples first, then run as a windowed bolt."""
        if tup.is_tick() or not self.recovery:
            super().execute(tup)
            return
        key = (tup.task, tup.component, tup.stream)
        saved = self.recovery.get(key)
        if saved is None:
            self.pending_tuples.append(tup)
            return
        last_expired, last_evaluated = saved
        msg_id = int(tup[self.msg_id_field])
        if msg_id <= last_expired:
            self.output.ack(tup)  # it expired before the failure: done already
        elif msg_id <= last_evaluated:
            self.add(tup)
        else:
            self.pending_tuples.append(tup)
            del self.recovery[key]
            if not self.recovery:
                super().start()
                pending, self.pending_tuples = self.pending_tuples, []
                for t in pending:
                    self.add(t)

    def on_activation(self, tuples: list, new: list, expired: list,
                      reference_time: int | None) -> None:
        """Evaluate, then note the highest evaluated and expired message ids."""
        super().on_activation(tuples, new, expired, reference_time)
        updates: dict[tuple, list[int]] = {}
        for tup, index in [(t, 0) for t in expired] + [(t, 1) for t in new]:
            key = (tup.task, tup.component, tup.stream)
            entry = updates.setdefault(key, list(self.stream_state.get(list(key)) or [_MIN, _MIN]))
            entry[index] = max(entry[index], int(tup[self.msg_id_field]))
        for key, entry in updates.items():
            self.stream_state.put(list(key), entry)

    def pre_prepare(self, txid: int) -> None:
        """Stage the window progress with the user's state."""
        self.bolt.pre_prepare(txid)
        if self.initialized and not self.recovery:
            self.stream_state.prepare_commit(txid)
            self.pre_prepared = True

    def pre_commit(self, txid: int) -> None:
        """Commit the window progress with the user's state."""
        self.bolt.pre_commit(txid)
        if not self.initialized or (not self.recovery and self.pre_prepared):
            self.stream_state.commit(txid)

    def pre_rollback(self) -> None:
        """Roll the window progress back with the user's state."""
        self.bolt.pre_rollback()
        self.stream_state.rollback()

