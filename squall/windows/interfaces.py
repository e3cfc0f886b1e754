"""What the window executors call on the user's bolt: Storm's ``IWindowedBolt`` and kin.

The executors depend on these shapes, not on ``WindowedBolt`` and ``StatefulWindowedBolt``
themselves: those build their executors in ``as_bolt``, so naming them back from the
executors would tie the two modules in a circle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from squall.api.components import OutputFieldsDeclarer
    from squall.api.context import TopologyContext
    from squall.windows.window import TupleWindow


class IWindowedBolt(Protocol):
    """A bolt that takes windows; ``WindowedBolt`` is the class users subclass."""

    def get_window_configuration(self) -> dict[str, Any]:
        """The window's shape under Storm's keys."""
        ...

    def get_timestamp_extractor(self) -> Callable[[Any], int] | None:
        """The extractor of event time, or None for processing time."""
        ...

    def get_component_configuration(self) -> dict | None:
        """The user's component configuration."""
        ...

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the user's output streams."""
        ...

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Called once per task, before any window."""
        ...

    def execute(self, window: TupleWindow) -> None:
        """Process one window."""
        ...

    def cleanup(self) -> None:
        """Called on a graceful stop."""
        ...


class IStatefulWindowedBolt(IWindowedBolt, Protocol):
    """A windowed bolt with checkpointed state; ``StatefulWindowedBolt`` is the user's class."""

    def init_state(self, state: Any) -> None:
        """Receive the state before the first window."""
        ...

    def pre_prepare(self, txid: int) -> None:
        """Called before the state stages transaction ``txid``."""
        ...

    def pre_commit(self, txid: int) -> None:
        """Called before the state commits transaction ``txid``."""
        ...

    def pre_rollback(self) -> None:
        """Called before the state rolls back to its last commit."""
        ...
