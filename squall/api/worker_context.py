"""What a worker knows about the topology it runs: ``WorkerTopologyContext`` (Storm's).

The plan it reads is passed in and named here by the shape the context reads of it
(``TaskLayout``), so the API never imports the runtime that builds the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from squall.api.fields import Fields
from squall.api.streams import GlobalStreamId, StreamDef
from squall.api.tuple import DEFAULT_STREAM


class TaskLayout(Protocol):
    """What a context reads of the task plan (``squall.runtime.plan.TaskPlan`` has this shape)."""

    @property
    def component_tasks(self) -> Mapping[str, list[int]]:
        """Component id -> its sorted task ids."""
        ...

    @property
    def task_component(self) -> Mapping[int, str]:
        """Task id -> its component id."""
        ...

    @property
    def streams(self) -> Mapping[str, Mapping[str, StreamDef]]:
        """Component id -> stream id -> the declared stream."""
        ...


class WorkerTopologyContext:
    """The topology as seen by one worker: tasks, components, streams."""

    def __init__(self, topology_name: str, plan: TaskLayout, worker_tasks: list[int],
                 worker_index: int = 0) -> None:
        self.topology_name = topology_name
        self._plan = plan
        self.worker_tasks: list[int] = list(worker_tasks)
        self.worker_index = worker_index

    def get_component_tasks(self, component: str) -> list[int]:
        """Sorted task ids of ``component`` (empty if unknown)."""
        return list(self._plan.component_tasks.get(component, []))

    def get_component_id(self, task_id: int) -> str:
        """The component of ``task_id``."""
        return self._plan.task_component[task_id]

    def get_component_ids(self) -> list[str]:
        """Every component id, system ones included."""
        return sorted(self._plan.component_tasks)

    def get_component_streams(self, component: str) -> list[str]:
        """Streams declared by ``component``."""
        return sorted(self._plan.streams.get(component, {}))

    def get_component_output_fields(self, component: str | GlobalStreamId,
                                    stream: str = DEFAULT_STREAM) -> Fields:
        """Fields of ``component``'s ``stream``; ``KeyError`` naming both if undeclared.

        ``component`` may be a ``GlobalStreamId`` (as Storm's overload), which names both.
        """
        if isinstance(component, tuple):
            component, stream = component
        try:
            return self._plan.streams[component][stream].fields
        except KeyError:
            raise KeyError(f"component {component!r} declares no stream {stream!r}") from None
