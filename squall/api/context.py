"""What a task knows about the topology it runs in: ``TopologyContext`` (Storm's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.api.fields import Fields
from squall.api.metrics import Counter, Gauge, Histogram, Meter, MetricRegistry, Timer
from squall.api.streams import GlobalStreamId
from squall.api.tuple import DEFAULT_STREAM
from squall.api.worker_context import TaskLayout, WorkerTopologyContext

if TYPE_CHECKING:
    from squall.api.topology import Grouping, StormTopology


class TopologyContext(WorkerTopologyContext):
    """The context handed to ``open``/``prepare``: the worker's view plus this task's ids."""

    def __init__(self, topology_name: str, plan: TaskLayout, worker_tasks: list[int],
                 task_id: int, worker_index: int = 0, *, topology: StormTopology | None = None,
                 call_soon: Callable[[Callable[[], None]], None] | None = None) -> None:
        super().__init__(topology_name, plan, worker_tasks, worker_index)
        self.task_id = task_id
        self.component_id = plan.task_component[task_id]
        self._task_data: dict[str, Any] = {}
        self._conf: dict = {}
        self._hooks: list[Any] = []
        self._on_hook: Callable[[Any], None] | None = None
        self.metric_registry = MetricRegistry(self.component_id, task_id)
        self._topology = topology
        self._call_soon = call_soon

    def bind_runtime(self, conf: dict, clock: Callable[[], float],
                     on_hook: Callable[[Any], None] | None) -> None:
        """Called by the task that owns this context: its conf, clock and hook sink."""
        self._conf = conf
        self.metric_registry.clock = clock
        self._on_hook = on_hook

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on this task's thread soon (at the start of the worker's next round).

        The one method of the context that any thread may call: a component that waits on
        something outside the worker (a subprocess, a socket) reads it on a thread of its
        own and hands the result to its task this way, so its task never blocks the worker.
        """
        if self._call_soon is None:
            raise RuntimeError(f"task {self.task_id} of {self.component_id!r} runs outside a "
                               f"worker: call_soon is not available")
        self._call_soon(fn)

    def get_this_sources(self) -> dict[GlobalStreamId, Grouping | None]:
        """Every stream this component subscribes to -> its grouping (Storm's ``getThisSources``).

        Keys are ``GlobalStreamId(component_id, stream_id)``, which unpack as pairs.
        """
        if self._topology is None:
            pairs = getattr(self._plan, "sources", {}).get(self.component_id, [])
            return {GlobalStreamId(c, s): None for c, s in pairs}
        spec = self._topology.components[self.component_id]
        return {GlobalStreamId(inp.component, inp.stream): inp.grouping for inp in spec.inputs}

    def get_this_targets(self) -> dict[str, dict[str, Grouping]]:
        """Subscribers of this component: stream -> subscriber component -> grouping."""
        if self._topology is None:
            return {}
        topology = self._topology
        return {stream: dict(topology.subscribers(self.component_id, stream))
                for stream in self.get_component_streams(self.component_id)}

    def get_this_component_tasks(self) -> list[int]:
        """Sorted task ids of this task's component."""
        return self.get_component_tasks(self.component_id)

    def get_this_task_index(self) -> int:
        """Position of this task among its component's tasks (0-based)."""
        return self.get_this_component_tasks().index(self.task_id)

    def get_this_output_fields(self, stream: str = DEFAULT_STREAM) -> Fields:
        """Fields of this component's ``stream``."""
        return self.get_component_output_fields(self.component_id, stream)

    def set_task_data(self, name: str, value: Any) -> None:
        """Keep a value for this task (Storm's ``setTaskData``)."""
        self._task_data[name] = value

    def get_task_data(self, name: str) -> Any:
        """A value kept with ``set_task_data``."""
        return self._task_data.get(name)

    # ---- metrics (Storm's metrics v2) ----------------------------------------------------

    def register_counter(self, name: str) -> Counter:
        """A counter of this task (``inc(n=1)``), summed per component in the topology's info."""
        return self.metric_registry.counter(name)

    def register_gauge(self, name: str, fn: Any) -> Gauge:
        """A gauge read (``fn()``, or ``fn.get_value()``) whenever the figures are read."""
        return self.metric_registry.gauge(name, fn)

    def register_histogram(self, name: str) -> Histogram:
        """A histogram of this task (``update(value)``)."""
        return self.metric_registry.histogram(name)

    def register_meter(self, name: str) -> Meter:
        """A meter of this task (``mark(n=1)``): count and rate per second."""
        return self.metric_registry.meter(name)

    def register_timer(self, name: str) -> Timer:
        """A timer of this task (``with timer.time(): ...``), durations in milliseconds."""
        return self.metric_registry.timer(name)

    # ---- task hooks (Storm's ITaskHook) -------------------------------------------------

    def add_task_hook(self, hook: Any) -> None:
        """Add ``hook`` to this task; its ``prepare(conf, context)`` is called now, as Storm's."""
        prepare = getattr(hook, "prepare", None)
        if callable(prepare):
            prepare(self._conf, self)
        self._hooks.append(hook)
        if self._on_hook is not None:
            self._on_hook(hook)

    def get_hooks(self) -> list[Any]:
        """The hooks added to this task, in order."""
        return list(self._hooks)
