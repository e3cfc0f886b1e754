"""Stateful windowed bolts: windows whose progress survives failures (Storm's two kinds).

``StatefulWindowedBolt`` with ``with_message_id_field(name)`` runs in a
``StatefulWindowedBoltExecutor`` (``squall.windows.stateful_executor``): the window itself
lives in memory, and checkpoints save, per source task and stream, the highest message id
that expired and that was evaluated. After a failure the spouts replay what was not acked;
replayed tuples that had expired are acked and skipped, those that were evaluated refill the
window without a second evaluation, and the rest are processed as new. Message ids must grow
per source task.

With ``with_persistence()`` it runs in a ``PersistentWindowedBoltExecutor``
(``squall.windows.persistent``).
"""

from __future__ import annotations

from typing import Any

from squall.windows import shapes
from squall.windows.bolt import WindowedBolt
from squall.windows.persistent import PersistentWindowedBoltExecutor
from squall.windows.stateful_executor import StatefulWindowedBoltExecutor


class StatefulWindowedBolt(WindowedBolt):
    """A windowed bolt with state (Storm's ``BaseStatefulWindowedBolt``).

    ``init_state(state)`` is called once, before the first window; ``pre_prepare``,
    ``pre_commit`` and ``pre_rollback`` as in ``StatefulBolt``.
    """

    def init_state(self, state: Any) -> None:
        """Receive the state (a ``KeyValueState`` by default) before the first window."""

    def pre_prepare(self, txid: int) -> None:
        """Called before the state stages transaction ``txid``."""

    def pre_commit(self, txid: int) -> None:
        """Called before the state commits transaction ``txid``."""

    def pre_rollback(self) -> None:
        """Called before the state rolls back to its last commit."""

    def with_persistence(self) -> StatefulWindowedBolt:
        """Save the window's tuples with every checkpoint too."""
        self._conf()[shapes.PERSISTENT] = True
        return self

    def with_message_id_field(self, name: str) -> StatefulWindowedBolt:
        """The field holding a tuple's message id (an integer growing per source task)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"message id field must be a field name, got {name!r}")
        self._conf()[shapes.MESSAGE_ID_FIELD] = name
        return self

    def is_persistent(self) -> bool:
        """True after ``with_persistence()``."""
        return bool(self._conf().get(shapes.PERSISTENT))

    def as_bolt(self) -> Any:
        """The executor that runs this bolt, by kind."""
        if self.is_persistent():
            return PersistentWindowedBoltExecutor(self)
        return StatefulWindowedBoltExecutor(self)
