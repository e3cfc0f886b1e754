"""A context and a recording collector for driving window executors without a cluster."""

from __future__ import annotations

from squall.api.fields import Fields
from squall.api.tuple import SYSTEM_COMPONENT, TICK_STREAM, Tuple


class Context:
    """What an executor reads of its context: its sources and tasks."""

    topology_name = "t"
    component_id = "w"
    task_id = 9

    def __init__(self, sources=(("s1", "default"),), tasks=None) -> None:
        self.sources = list(sources)
        self.tasks = tasks or {"s1": [1]}

    def get_this_sources(self):
        return list(self.sources)

    def get_component_tasks(self, component):
        return list(self.tasks.get(component, []))

    def get_this_component_tasks(self):
        return [self.task_id]

    def get_this_task_index(self):
        return 0


class Collector:
    """Records emits, acks and fails."""

    def __init__(self) -> None:
        self.emitted: list = []
        self.acked: list = []
        self.failed: list = []

    def emit(self, values, anchors=None, stream="default"):
        self.emitted.append((stream, values, anchors))
        return []

    def emit_direct(self, task, values, anchors=None, stream="default"):
        self.emitted.append((stream, values, anchors))

    def ack(self, tup):
        self.acked.append(tup)

    def fail(self, tup):
        self.failed.append(tup)

    def reset_timeout(self, tup):
        pass

    def report_error(self, error):
        raise error


def tup(values, fields=("ts",), component="s1", stream="default", task=1) -> Tuple:
    return Tuple(list(values), Fields(*fields), component, stream, task)


def tick() -> Tuple:
    return Tuple([], Fields(), SYSTEM_COMPONENT, TICK_STREAM, 0)
