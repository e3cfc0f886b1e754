"""``AsyncBolt``: a bolt whose ``execute`` is a coroutine, with Flink's Async I/O as the model.

For bolts that wait on the outside world (a database, an HTTP service): many calls wait at
once on an asyncio event loop of the worker, while the worker's loop thread goes on with the
other tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from squall.api.components import Bolt
from squall.api.tuple import Tuple

if TYPE_CHECKING:
    from squall.api.context import TopologyContext


class AsyncBolt(Bolt):
    """A bolt whose ``execute`` is ``async``; up to ``capacity`` calls in flight per task.

    Contract:

    - ``prepare(conf, context, collector)`` as ``Bolt``; then ``prepare_async(conf, context)``
      runs on the worker's event loop (set up async clients there: they live on that loop).
    - ``execute(tup)`` runs on that event loop; emit anchored to ``tup`` and ack or fail it
      as in a ``Bolt``. At most ``capacity`` tuples are in flight per task; beyond that the
      task takes no more input and its queue fills, which throttles upstream (backpressure).
    - A call that takes longer than ``timeout`` seconds is cancelled and its tuple failed,
      with the reason reported as an error of the component; an exception fails the tuple.
    - ``ordered = True``: what each call emitted, acked and failed takes effect in input
      order (a call that finished early waits for the ones before it); ``False``: as calls
      complete.
    - ``cleanup()`` runs on the worker's loop thread after in-flight calls were cancelled.
    """

    capacity: int = 100
    timeout: float = 5.0
    ordered: bool = True

    async def prepare_async(self, conf: dict, context: TopologyContext) -> None:
        """Set up what ``execute`` awaits (runs on the worker's event loop, after ``prepare``)."""

    async def execute(self, tup: Tuple) -> None:  # type: ignore[override]
        """Handle one tuple; must ack or fail it."""
        raise NotImplementedError
