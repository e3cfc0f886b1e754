"""Output collectors: emit, anchor, ack and fail, as Storm's.

A collector belongs to one task and is called from that task's thread only. It reaches the
world through its task's ``TaskHost`` (``host.py``): it never knows which worker, thread or
event loop carries its tuples.
"""

from __future__ import annotations

import sys
import sysconfig
from threading import get_ident
from typing import Any

from squall.api.errors import FailedException
from squall.api.tuple import DEFAULT_STREAM, TICK_STREAM, Tuple
from squall.runtime.checkpoint import CHECKPOINT_STREAM
from squall.runtime.host import Task
from squall.runtime.ids import id_source
from squall.runtime.metrics import ACKED_SAMPLES, FAILED_SAMPLES
from squall.runtime.plan import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET
from squall.runtime.routing import DirectOnly, Router, RouterBase

try:
    import cython
except ImportError:  # plain Python without Cython installed: tuple's stand-in (never compiled)
    from squall.api.tuple import cython  # type: ignore[assignment]

# the targets of an emit nobody subscribes to, shared: ``_send`` and the hooks only read
# them (a new empty list per emit of a sink bolt was an allocation and a free per tuple)
NO_TARGETS: list[int] = []
# looked up by name: compiled, ``Task.send_ack`` is the C method, not the class attribute
TASK_SEND_ACK = getattr(Task, "send_ack")  # noqa: B009 - a task type with this one overrides nothing


def _thread_id() -> int:
    """The calling thread's id (compiled, a C function calling CPython's, with no Python int)."""
    if cython.compiled:
        return _c_thread_id()  # type: ignore[name-defined]  # noqa: F821 - collectors.pxd's C function
    return get_ident()


# Compiled, on CPython before 3.14 (whose frames may pass a variable's list to a call without
# a reference of its own) with the GIL (a free-threaded build counts references per thread),
# the refcount tells a list built for the emit alone (``emit([w])``) from one the caller
# keeps: only the kept one is copied (a list made and freed per tuple was about 5% of a
# word-count or pipeline sentence's instructions)
_reuse_lists = (cython.compiled and sys.version_info < (3, 14)
                and not sysconfig.get_config_var("Py_GIL_DISABLED"))
REUSE_LISTS = bool(_reuse_lists)  # the same, for Python to read (a cdef global is C's only)


def _private(values: list, temp_refs: int) -> list:
    """``values`` when no one but the emit's caller can see it, else a copy.

    The caller may reuse or change its list after emit. ``temp_refs``: the refcount of a
    list built in the call (``emit([w])``) as the call site sees it, fixed by its code
    (tests/unit/test_collectors.py checks both sides of it).
    """
    if cython.compiled and _reuse_lists and _c_refcnt(values) <= temp_refs:  # type: ignore[name-defined]  # noqa: F821
        return values
    return values[:]


class StreamRoute:
    """How one task emits on one stream: arity check and routers (or direct targets)."""

    __slots__ = ("stream", "arity", "routers", "single", "direct", "emitted", "transferred")

    def __init__(self, stream: str, arity: int, routers: list[Router],
                 direct: DirectOnly | None) -> None:
        self.stream = stream
        self.arity = arity
        self.routers = routers
        # the common case, one subscriber: its router called directly (a C call, compiled)
        self.single = (routers[0] if len(routers) == 1 and isinstance(routers[0], RouterBase)
                       else None)
        self.direct = direct
        self.emitted = 0  # this task's tuples on this stream, and their copies sent (Storm's UI)
        self.transferred = 0


class _Emitter:
    """Routing shared by the spout and bolt collectors."""

    def __init__(self, task: Task, routes: dict[str, StreamRoute]) -> None:
        self._task = task
        self._routes = routes
        self._host = task.host
        self._metrics = task.metrics
        self._metrics.outputs = routes  # read for the per-stream figures
        self._component = task.component
        self._edges = id_source()  # random 64-bit edge ids (splitmix64 when compiled)
        # the route of the stream emitted last (mostly the same str object): no dict lookup
        self._last_stream: str | None = None
        self._last_route: StreamRoute | None = None

    def _route(self, stream: str, values: Any) -> tuple[StreamRoute, list, list[int]]:
        route = self._routes.get(stream)
        if (route is None or route.direct is not None or type(values) is not list
                or len(values) != route.arity):
            return self._route_checked(stream, values)
        values = _private(values, 5)
        single = route.single
        if single is not None:
            return route, values, single.route(values)
        targets: list[int] = []
        for r in route.routers:
            targets.extend(r(values))
        return route, values, targets

    def _route_checked(self, stream: str, values: Any) -> tuple[StreamRoute, list, list[int]]:
        """``_route`` for everything but a well-formed list: converts or raises clearly."""
        route = self._routes.get(stream)
        if route is None:
            raise ValueError(
                f"component {self._component!r} emitted to stream {stream!r}, which it does not "
                f"declare; declare it in declare_output_fields"
            )
        if not isinstance(values, (list, tuple)):
            raise TypeError(
                f"component {self._component!r} emitted {type(values).__name__} on stream "
                f"{stream!r}; emit a list of values"
            )
        values = list(values)  # a copy: the caller may reuse its list after emit
        if len(values) != route.arity:
            raise ValueError(
                f"component {self._component!r} emitted {len(values)} values on stream "
                f"{stream!r}, which declares {route.arity} fields"
            )
        if route.direct is not None:
            raise ValueError(
                f"component {self._component!r} used emit on direct stream {stream!r}; "
                f"use emit_direct(task, values)"
            )
        routers = route.routers
        if len(routers) == 1:
            return route, values, routers[0](values)
        targets: list[int] = []
        for r in routers:
            targets.extend(r(values))
        return route, values, targets

    def _direct(self, task: int, stream: str, values: list) -> StreamRoute:
        if not isinstance(values, (list, tuple)):
            raise TypeError(
                f"component {self._component!r} emitted {type(values).__name__} on stream "
                f"{stream!r}; emit a list of values"
            )
        route = self._routes.get(stream)
        if route is None or route.direct is None:
            what = "does not declare" if route is None else "declares as not direct"
            raise ValueError(
                f"component {self._component!r} used emit_direct on stream {stream!r}, which "
                f"it {what}; declare it with direct=True"
            )
        if len(values) != route.arity:
            raise ValueError(
                f"component {self._component!r} emitted {len(values)} values on stream "
                f"{stream!r}, which declares {route.arity} fields"
            )
        if task not in route.direct.targets:
            raise ValueError(
                f"component {self._component!r} emit_direct to task {task!r} on stream "
                f"{stream!r}: that task does not subscribe to it "
                f"(subscribers: {sorted(route.direct.targets)})"
            )
        return route

    def report_error(self, error: BaseException) -> None:
        """Report ``error`` as an error of this component (log, UI, topology info)."""
        self._host.report_error(self._task, error)

    def _foreign(self, call: str) -> None:
        """Refuse a call from a thread other than the task's (RELIABILITY E10)."""
        raise RuntimeError(
            f"component {self._component!r} task {self._task.task_id}: {call} was called from "
            f"thread {get_ident()}, not the task's own thread; collectors are not thread-safe: "
            f"call them from execute/next_tuple, or use set_threaded() or AsyncBolt for work "
            f"that waits"
        )


class SpoutOutputCollector(_Emitter):
    """Emits spout tuples; a ``msg_id`` makes the tuple tracked by the ackers.

    Which lists ``emit`` copies: as ``OutputCollector`` says.

    A tracked emit goes into ``pending`` (the spout task's map of roots in flight); what must
    wait until ``next_tuple`` returns collects in ``acks_soon`` (acking off, or nobody
    subscribes), ``completed_soon`` (msg id, complete latency in ms: a tree that completed
    inside its chain's call, ``host.AckScope``) and ``fails_soon`` (the emit could not be
    sent): the spout task runs them.
    """

    def __init__(self, task: Task, routes: dict[str, StreamRoute], pending: Any,
                 sample_every: int = 1) -> None:
        super().__init__(task, routes)
        self._pending = pending
        self.acks_soon: list[Any] = []
        self.fails_soon: list[Any] = []
        self.completed_soon: list[Any] = []
        # Storm stamps the emit time of one tracked emit in ``topology.stats.sample.rate``
        # (and every one a hook sees): only those trees are timed; the others are stamped
        # -1.0 (no clock reads a negative time) and complete with no clock read
        self._sample_every = sample_every
        self._sample_left = 1  # the first tracked emit is timed

    def emit(self, values: list, stream: str = DEFAULT_STREAM, msg_id: Any = None) -> list[int]:
        """Emit ``values`` on ``stream``; returns the target task ids."""
        owner = self._task.owner
        if owner and owner != _thread_id():
            self._foreign("emit")
        route, values, targets = self._route(stream, values)
        self._send(route, values, targets, msg_id)
        return list(targets)  # routers reuse their lists; the caller gets its own

    def emit_direct(self, task: int, values: list, stream: str = DEFAULT_STREAM,
                    msg_id: Any = None) -> None:
        """Emit ``values`` on direct ``stream`` to ``task`` only."""
        self._send(self._direct(task, stream, values), list(values), [task], msg_id)

    def _send(self, route: StreamRoute, values: list, targets: list[int], msg_id: Any) -> None:
        task = self._task
        host = self._host  # its cpdef methods are not cached as bound methods (compiled)
        stream = route.stream
        n = len(targets)
        self._metrics.emitted += 1
        self._metrics.transferred += n
        route.emitted += 1
        route.transferred += n
        if self._host.tap is not None:
            self._host.tap(task.component, stream, values, task.task_id)
        hooks = task.hooks
        if hooks is not None:
            hooks.emit(values, stream, targets)
        if msg_id is None:
            for t in targets:
                host.deliver(t, task, stream, values, None)
            return
        if not task.acking or not targets:
            for t in targets:
                host.deliver(t, task, stream, values, None)
            self.acks_soon.append(msg_id)
            return
        root = task.new_root()
        edges = self._edges
        ack_val = 0
        scope = task.scope
        emitted_at = -1.0  # not timed
        left = self._sample_left - 1
        if left <= 0:
            left = self._sample_every
            emitted_at = host.clock_now()
        elif hooks is not None:
            emitted_at = host.clock_now()
        self._sample_left = left
        if scope is not None and (hooks is not None or scope.hooked or scope.open):
            scope = None  # Storm's hooks see every ledger message: the acker's path
        if scope is not None:
            # the chain runs inside deliver1: acks of this root by its members XOR into
            # the scope, and a tree that never left the chain is done when the call is
            scope.root = root
            scope.acc = 0
            scope.leaked = False
            scope.open = True
        try:
            for t in targets:
                edge = edges.next()
                ack_val ^= edge
                host.deliver1(t, task, stream, values, root, edge)
        except Exception:
            if scope is not None:
                scope.open = False
            # never tracked, so no ack or timeout would ever come: fail it (after
            # next_tuple returns; never inside it: a spout's ``fail`` must not run
            # re-entrantly), so the spout's message is not silently lost
            self.fails_soon.append(msg_id)
            raise
        if scope is not None:
            scope.open = False
            ack_val ^= scope.acc
            if not scope.leaked and ack_val == 0:
                # completed in the call; the spout's ``ack`` runs after next_tuple returns
                self.completed_soon.append(msg_id)
                self.completed_soon.append((host.clock_now() - emitted_at) * 1000.0
                                           if emitted_at >= 0.0 else -1.0)
                return
        # remembered until its tree is acked, failed or timed out
        self._pending.put_new(root, msg_id, emitted_at)
        if hooks is not None:  # Storm's hooks see the messages to the ackers as emits too
            hooks.emit([root, ack_val, task.task_id], ACK_INIT, [task.acker_for(root)])
        task.send_init(root, ack_val)


class OutputCollector(_Emitter):
    """Emits bolt tuples anchored to inputs, and acks or fails inputs.

    A list passed to ``emit`` is copied when anything but the call refers to it (a variable,
    an attribute, a list or dict it is in), so the caller may change or reuse it after the
    emit. A list only the call refers to is sent as it is: one built in the call
    (``emit([word])``), one in the argument tuple of a star call or a ``functools.partial``
    (``emit(*args)``), or one only C code refers to (Cython, an extension module). Do not
    change those after the emit, as in Storm, whose collectors keep the caller's list.
    """

    def __init__(self, task: Task, routes: dict[str, StreamRoute]) -> None:
        super().__init__(task, routes)
        self._acking = task.acking
        # the task's type overrides no ``send_ack``: ``ack`` calls ``Task.send_ack`` directly.
        # Compiled, a call through the instance looks for a Python override each time (a
        # task has a __dict__, and the bolts of a worker take turns, so Cython's one-entry
        # cache misses: about 380 instructions), and asking the type per ack cost 130
        self._direct_ack = getattr(type(task), "send_ack", None) is TASK_SEND_ACK
        # a stateful bolt's acks of tracked data tuples wait here for the commit
        # (squall.runtime.stateful); None: acks go at once
        self._held: list[Tuple] | None = None

    def emit(self, values: list, anchors: Tuple | list[Tuple] | None = None,
             stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to ``anchors``; returns target task ids."""
        owner = self._task.owner
        if owner and owner != _thread_id():
            self._foreign("emit")
        targets: list[int]
        if stream is self._last_stream:
            route = self._last_route
        else:
            route = self._routes.get(stream)
            if route is not None:
                self._last_stream = stream
                self._last_route = route
        if (route is None or route.direct is not None or type(values) is not list
                or len(values) != route.arity):
            route, vals, targets = self._route_checked(stream, values)
            self._send(route, vals, targets, anchors)
            return list(targets)
        vals = values  # a list (checked above; typed when compiled)
        single = route.single
        if single is None and not route.routers:
            # nobody subscribes: the values go nowhere, so unless a tap or a hook sees them
            # the emit is only counted (a sink bolt's emits cost a ``_send`` call each)
            if self._host.tap is None and self._task.hooks is None:
                self._metrics.emitted += 1
                route.emitted += 1
                return []
            self._send(route, vals[:], NO_TARGETS, anchors)
            return []
        vals = _private(vals, 3)
        if single is not None:
            targets = single.route(vals)
        else:
            targets = []
            for r in route.routers:
                targets.extend(r(vals))
        self._send(route, vals, targets, anchors)
        return targets[:]  # routers reuse their lists; the caller gets its own

    def emit_direct(self, task: int, values: list, anchors: Tuple | list[Tuple] | None = None,
                    stream: str = DEFAULT_STREAM) -> None:
        """Emit on direct ``stream`` to ``task`` only."""
        self._send(self._direct(task, stream, values), list(values), [task], anchors)

    def _send(self, route: StreamRoute, values: list, targets: list[int],
              anchors: Tuple | list[Tuple] | None) -> None:
        task = self._task
        host = self._host
        if task._ack_held:  # a chained target may ack or fail in place: the held ack first
            Task.flush_ack(task)
        stream = route.stream
        n = len(targets)
        self._metrics.emitted += 1
        self._metrics.transferred += n
        route.emitted += 1
        route.transferred += n
        if self._host.tap is not None:
            self._host.tap(task.component, stream, values, task.task_id)
        if task.hooks is not None:
            task.hooks.emit(values, stream, targets)
        if anchors is None or not task.acking:
            for t in targets:
                host.deliver(t, task, stream, values, None)
            return
        if isinstance(anchors, Tuple):
            anchor = anchors  # typed as a Tuple when compiled
            nroots = anchor._nroots
            if nroots == 0:
                for t in targets:
                    host.deliver(t, task, stream, values, None)
                return
            if nroots == 1:  # the common case: one anchor from one spout tuple, no dict
                root = anchor._root
                edges = self._edges
                acc = anchor._ack_val
                for t in targets:
                    edge = edges.next()
                    acc ^= edge
                    host.deliver1(t, task, stream, values, root, edge)
                anchor._ack_val = acc
                return
            tracked = [anchor]
        else:
            # anchoring twice to one input must not cancel the edge (A4)
            tracked = [a for a in {id(a): a for a in anchors}.values() if a._nroots]
        if not tracked:
            for t in targets:
                host.deliver(t, task, stream, values, None)
            return
        edges = self._edges
        for t in targets:
            ids: dict[int, int] = {}
            for a in tracked:
                # one edge per anchor: two anchors of one root must not cancel each other
                edge = edges.next()
                a._ack_val ^= edge
                for root in a._ids:  # type: ignore[union-attr]
                    ids[root] = ids.get(root, 0) ^ edge
            host.deliver(t, task, stream, values, ids)

    def ack(self, tup: Tuple) -> None:
        """The input ``tup`` is done; its tree completes when all its tuples are."""
        owner = self._task.owner
        if owner and owner != _thread_id():
            self._foreign("ack")
        if tup._done:
            return
        tup._done = True
        nroots = tup._nroots
        held = self._held
        if held is not None and nroots and tup.stream != CHECKPOINT_STREAM:
            held.append(tup)
            return
        task = self._task
        hooks = task.hooks
        if nroots and self._acking:
            extra = tup._ack_val
            if nroots == 1:
                value = tup._edge ^ extra
                if hooks is not None:  # as Storm's: the ack message is an emit to the acker
                    hooks.emit([tup._root, value], ACK_ACK, [task.acker_for(tup._root)])
                if self._direct_ack:  # see __init__
                    Task.send_ack(task, tup._root, value)
                else:
                    task.send_ack(tup._root, value)
            else:
                for root, edge in tup._idmap.items():  # type: ignore[union-attr]
                    if hooks is not None:
                        hooks.emit([root, edge ^ extra], ACK_ACK, [task.acker_for(root)])
                    task.send_ack(root, edge ^ extra)
        if tup.stream is not TICK_STREAM:  # acking a tick is a no-op, not a metric
            m = self._metrics
            m.acked += 1
            if tup._t0:
                ms = (self._host.clock() - tup._t0) * 1000.0
                m.record_process(ms)
                m.sample_input(tup.component, tup.stream, ACKED_SAMPLES, ms)
        if hooks is not None:
            hooks.bolt_ack(tup, self._latency(tup))

    def release(self, tuples: list[Tuple], ok: bool) -> None:
        """Ack (``ok``) or fail ``tuples`` whose acks ``_held`` kept, at once (a commit's burst)."""
        held = self._held
        self._held = None  # the verdicts go out now, not back into the hold
        try:
            for tup in tuples:
                tup._done = False
                if ok:
                    self.ack(tup)
                else:
                    self.fail(tup)
        finally:
            self._held = held

    def _latency(self, tup: Tuple) -> float | None:
        """Milliseconds since ``tup``'s execute began; None if it was not timed."""
        return (self._host.clock() - tup._t0) * 1000.0 if tup._t0 else None

    def fail(self, tup: Tuple) -> None:
        """``tup`` failed: its whole tree fails at once and the spout may replay it."""
        self.fail_with_error(tup, None)

    def fail_with_error(self, tup: Tuple, error: str | None) -> None:
        """Fail ``tup``, telling its spouts where (this task) and why (``error``'s text)."""
        owner = self._task.owner
        if owner and owner != _thread_id():
            self._foreign("fail")
        if tup._done:
            return
        tup._done = True
        task = self._task
        hooks = task.hooks
        if task._ack_held:  # the ledger sees this task's acks and fails in their order
            Task.flush_ack(task)
        if tup._ids and task.acking:
            for root in tup._ids:
                acker = task.acker_for(root)
                if hooks is not None:
                    hooks.emit([root], ACK_FAIL, [acker])
                self._host.deliver(acker, task, ACK_FAIL,
                                     [root, task.component, task.task_id, error], None)
        if tup.stream is not TICK_STREAM:
            self._metrics.failed += 1
            if tup._t0:
                self._metrics.sample_input(tup.component, tup.stream, FAILED_SAMPLES, 0.0)
        if hooks is not None:
            hooks.bolt_fail(tup, self._latency(tup))

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of ``tup``'s trees (for tuples held a long time)."""
        task = self._task
        if task._ack_held:
            Task.flush_ack(task)
        if tup._ids and task.acking and not tup._done:
            for root in tup._ids:
                acker = task.acker_for(root)
                if task.hooks is not None:
                    task.hooks.emit([root], ACK_RESET, [acker])
                self._host.deliver(acker, task, ACK_RESET, [root], None)


class BasicOutputCollector:
    """The collector a ``BasicBolt`` gets: emits are anchored to the current input."""

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self.input: Tuple | None = None

    def emit(self, values: list, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit anchored to the input being executed."""
        return self._collector.emit(values, self.input, stream)

    def emit_direct(self, task: int, values: list, stream: str = DEFAULT_STREAM) -> None:
        """Emit to ``task`` on a direct stream, anchored to the input."""
        self._collector.emit_direct(task, values, self.input, stream)

    def report_error(self, error: BaseException) -> None:
        """Report ``error`` as an error of this component."""
        self._collector.report_error(error)

    def fail(self) -> None:
        """Fail the current input (same as raising ``FailedException``)."""
        raise FailedException("failed by the bolt")
