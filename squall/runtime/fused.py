"""The fused delivery of a chain (``chain.py`` plans the chains): ``ChainHost`` and its wiring.

The host of a chain's upstream task hands the tuples it emits on the chained stream straight
to ``handle`` of its partner task, on the emitting thread: no queue, no transfer, no round in
between. This module sits above ``host`` (it is a ``TaskHost``), so it is apart from the
planner, which ``plan`` uses below ``host``.

While the emitting task times an ``execute`` (``TaskHost.timing``), the time of each hop run
in place is added to ``fused_secs``: each component's latency and capacity are its own code's.
"""

from __future__ import annotations

from squall.api.tuple import new_tuple, new_tuple1
from squall.runtime.host import AckScope, Task, TaskHost
from squall.runtime.tasks import BoltTask


class ChainHost(TaskHost):
    """The host of a chain's upstream task: its tuples on the chained stream run in place.

    A tuple to ``target`` on ``stream`` is made as a queued one and handed to ``handle`` of
    the downstream task at once, on the emitting thread; everything else goes to ``host``
    (the worker), as it would without chaining. A chain's tail gets one with no target
    (``stream`` None): all it sends goes to ``host``, seen by the chain's ``scope``.

    ``scope`` (a spout-headed chain's ``AckScope``, else None): while it is open, anything
    passed on to ``host`` and any multi-root delivery leaves the chain, so it marks the
    scope leaked (the acker must see the tree then).
    """

    def __init__(self, host: TaskHost, stream: str | None, target: int,
                 scope: AckScope | None = None) -> None:
        super().__init__(host.plan, host.clock, host.errors, host.tap)
        self.host = host
        self.stream = stream
        self.target = target
        self.task: Task | None = None  # bound once every task of the worker is made
        # the same task when it is a plain BoltTask, whose ``handle`` is then called
        # directly: Cython's per-call lookup for a Python override of ``handle`` (a task
        # has a ``__dict__``) made a bound method per fused tuple
        self.bolt_task: BoltTask | None = None
        self.scope = scope

    def bind(self, task: Task) -> None:
        """The downstream task that takes the chained tuples."""
        self.task = task
        self.bolt_task = task if type(task) is BoltTask else None

    def deliver(self, target: int, src: Task, stream: str, values: list,
                ids: dict[int, int] | None) -> None:
        """Run ``target``'s ``handle`` in place for a chained tuple, else pass it on."""
        task = self.task
        scope = self.scope
        if scope is not None and scope.open and (ids is not None or task is None
                                                 or target != self.target
                                                 or stream != self.stream):
            scope.leaked = True  # conservative: any root may ride on it
        if task is not None and target == self.target and stream == self.stream:
            tup = new_tuple(values, src.out_fields[stream], src.component, stream, src.task_id, ids)
            t0 = self.clock() if self.timing else 0.0
            if self.bolt_task is not None:
                BoltTask.handle(self.bolt_task, tup)
            else:
                task.handle(tup)
            if self.timing:  # the hop's time is the downstream's, not the emitter's
                self.fused_secs += self.clock() - t0
            return
        self.host.deliver(target, src, stream, values, ids)

    def deliver1(self, target: int, src: Task, stream: str, values: list, root: int,
                 edge: int) -> None:
        """``deliver`` for a tuple of one tree."""
        task = self.task  # None at a chain's tail: a pointer test before the compares
        if task is not None and target == self.target and stream == self.stream:
            tup = new_tuple1(values, src.fields_of(stream), src.component, stream, src.task_id,
                             root, edge)
            # the same lines as in deliver: a cdef helper for them cost about 200
            # instructions per pipeline sentence (callgrind), on the hottest call there is
            t0 = self.clock() if self.timing else 0.0
            if self.bolt_task is not None:
                BoltTask.handle(self.bolt_task, tup)
            else:
                task.handle(tup)
            if self.timing:  # the hop's time is the downstream's, not the emitter's
                self.fused_secs += self.clock() - t0
            return
        scope = self.scope
        if scope is not None and scope.open:
            scope.leaked = True
        self.host.deliver1(target, src, stream, values, root, edge)

    def verdict(self, target: int, src: Task, root: int) -> None:
        """Passed on to the worker."""
        self.host.verdict(target, src, root)

    def buffer_ack(self, acker: int, src: Task, root: int, value: int) -> None:
        """Passed on to the worker (an ack of the open scope's root never comes here)."""
        self.host.buffer_ack(acker, src, root, value)

    def report_error(self, task: Task, error: BaseException) -> None:
        """Passed on to the worker."""
        self.host.report_error(task, error)
