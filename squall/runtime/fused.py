"""The fused delivery of a chain (``chain.py`` plans the chains): ``ChainHost`` and its wiring.

The host of a chain's upstream task hands the tuples it emits on the chained stream straight
to ``handle`` of its partner task, on the emitting thread: no queue, no transfer, no round in
between. This module sits above ``host`` (it is a ``TaskHost``), so it is apart from the
planner, which ``plan`` uses below ``host``.
"""

from __future__ import annotations

from squall.api.tuple import new_tuple, new_tuple1
from squall.runtime.host import Task, TaskHost


class ChainHost(TaskHost):
    """The host of a chain's upstream task: its tuples on the chained stream run in place.

    A tuple to ``target`` on ``stream`` is made as a queued one and handed to ``handle`` of
    the downstream task at once, on the emitting thread; everything else goes to ``host``
    (the worker), as it would without chaining.
    """

    def __init__(self, host: TaskHost, stream: str, target: int) -> None:
        super().__init__(host.plan, host.clock, host.errors, host.tap)
        self.host = host
        self.stream = stream
        self.target = target
        self.task: Task | None = None  # bound once every task of the worker is made

    def bind(self, task: Task) -> None:
        """The downstream task that takes the chained tuples."""
        self.task = task

    def deliver(self, target: int, src: Task, stream: str, values: list,
                ids: dict[int, int] | None) -> None:
        """Run ``target``'s ``handle`` in place for a chained tuple, else pass it on."""
        task = self.task
        if target == self.target and stream == self.stream and task is not None:
            task.handle(new_tuple(values, src.out_fields[stream], src.component, stream,
                                  src.task_id, ids))
            return
        self.host.deliver(target, src, stream, values, ids)

    def deliver1(self, target: int, src: Task, stream: str, values: list, root: int,
                 edge: int) -> None:
        """``deliver`` for a tuple of one tree."""
        task = self.task
        if target == self.target and stream == self.stream and task is not None:
            task.handle(new_tuple1(values, src.out_fields[stream], src.component, stream,
                                   src.task_id, root, edge))
            return
        self.host.deliver1(target, src, stream, values, root, edge)

    def verdict(self, target: int, src: Task, root: int) -> None:
        """Passed on to the worker."""
        self.host.verdict(target, src, root)

    def buffer_ack(self, acker: int, src: Task, root: int, value: int) -> None:
        """Passed on to the worker."""
        self.host.buffer_ack(acker, src, root, value)

    def report_error(self, task: Task, error: BaseException) -> None:
        """Passed on to the worker."""
        self.host.report_error(task, error)
