"""``CustomStreamGrouping``: the class users subclass to route tuples themselves (Storm's).

It sits below the built topology, which holds one per custom subscription, and above the
worker's view of the topology, which its ``prepare`` receives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from squall.api.streams import GlobalStreamId
    from squall.api.worker_context import WorkerTopologyContext


class CustomStreamGrouping:
    """User-defined routing: ``choose_tasks`` returns the target task ids for each tuple."""

    def prepare(self, context: WorkerTopologyContext, stream: GlobalStreamId,
                target_tasks: list[int]) -> None:
        """Called once per emitting task, before any ``choose_tasks``.

        ``stream`` is the input being grouped, so
        ``context.get_component_output_fields(stream.component_id, stream.stream_id)`` gives
        its fields; ``target_tasks`` are the subscribing component's task ids, sorted.
        """

    def choose_tasks(self, task_id: int, values: list) -> list[int]:
        """Target task ids for ``values`` emitted by ``task_id``."""
        raise NotImplementedError(f"{type(self).__name__} must implement choose_tasks")
