"""What a task is, and what it may ask of whatever runs it: ``Task`` and ``TaskHost``.

A task (spout, bolt or acker runner) never knows whether the worker's loop, a thread of its
own (``threads.DeferredHost``) or an asyncio loop (``async_tasks``) runs it: it holds a
``TaskHost`` and asks it for the few things a task needs from outside itself:

- ``deliver`` / ``deliver1``: hand one emitted tuple to a task (here or in another worker);
- ``verdict``: an acker's ack of a root, for its spout task;
- ``buffer_ack``: an ack for an acker in another worker (combined per round);
- ``clock``: the topology's clock (simulated under ``squall.testing.simulated_time``);
- ``report_error``: an error of the task's user code (log, UI, topology info);
- ``tap``: the sampler of emitted tuples, or None.

This module sits below tasks, collectors and every host, so none of them imports another to
name it. ``TaskHost`` is a base class rather than a ``typing.Protocol`` because the compiled
hot path (host.pxd) calls its ``cpdef`` methods through a C vtable: ``Worker``,
``DeferredHost`` and the test fakes override them.

``Task`` is declared here, beside the host, because the two name each other's C layout (a
host's ``deliver`` reads its source task's fields; a task calls its host).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from squall.api.context import TopologyContext
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.runtime.hooks import TaskHooks
from squall.runtime.ids import id_source
from squall.runtime.metrics import TaskMetrics
from squall.runtime.plan import ACK_ACK, ACK_INIT

U64_MAX = (1 << 64) - 1  # the largest root id

try:
    import cython
except ImportError:  # plain Python without Cython installed: tuple's stand-in (never compiled)
    from squall.api.tuple import cython  # type: ignore[assignment]

# time.monotonic is clock_gettime(CLOCK_MONOTONIC) on Linux: compiled, the tasks read that
# clock in C (host.pxd's ``_c_monotonic``), with no call through Python and no float object
REAL_CLOCK = time.monotonic if sys.platform.startswith("linux") else None


class TaskHost:
    """What a task may ask of whatever runs it (see the module's docstring).

    ``plan`` (the ``TaskPlan``), ``clock`` (seconds, a callable), ``errors`` (an
    ``ErrorLog``) and ``tap`` (``tap(component, stream, values)`` or None) are plain fields,
    read by tasks and collectors directly.

    ``timing`` and ``fused_secs``: a bolt task sets ``timing`` while it times one
    ``execute``; a host that runs a fused hop in place (``fused.ChainHost``) then adds the
    hop's time to ``fused_secs``, which the task leaves out of its own latency.
    """

    def __init__(self, plan: Any, clock: Callable[[], float], errors: Any,
                 tap: Callable[[str, str, list, int], None] | None = None) -> None:
        self.plan = plan
        self.clock = clock
        self.errors = errors
        self.tap = tap
        self.timing = False
        self.fused_secs = 0.0

    def clock_now(self) -> float:
        """``clock()``, read in C when compiled and it is the real clock (a complete latency's reads)."""
        clock = self.clock
        if cython.compiled and clock is REAL_CLOCK:
            return _c_monotonic()  # type: ignore[name-defined]  # noqa: F821 - host.pxd's C function
        return clock()

    def deliver(self, target: int, src: Task, stream: str, values: list,
                ids: dict[int, int] | None) -> None:
        """Hand one tuple from ``src`` to task ``target`` (``ids``: root -> edge, or None)."""
        raise NotImplementedError

    def deliver1(self, target: int, src: Task, stream: str, values: list, root: int,
                 edge: int) -> None:
        """``deliver`` for a tuple of one tree: its root and edge, no map."""
        self.deliver(target, src, stream, values, {root: edge})

    def verdict(self, target: int, src: Task, root: int) -> None:
        """An acker's ack of ``root`` for spout task ``target``."""
        self.deliver(target, src, ACK_ACK, [root], None)

    def buffer_ack(self, acker: int, src: Task, root: int, value: int) -> None:
        """An ack for acker task ``acker`` in another worker (XOR ``value`` into ``root``)."""
        raise NotImplementedError

    def report_error(self, task: Task, error: BaseException) -> None:
        """Record an error raised by ``task``'s user code (log + topology info)."""
        self.errors.report(task.component, task.task_id, error)


class AckScope:
    """One chain's open tracked emit: acks of its root by chain members XOR in here.

    A spout task whose chain runs inside its ``emit`` (``fused.ChainHost``) opens the scope
    for the root it emits; while ``open``, a chain member's ``send_ack`` of that root goes
    into ``acc`` instead of the acker's ledger. Anything that lets the tree leave the chain
    (a delivery outside it, a fail, a timeout reset) sets ``leaked``; a hook on any member
    sets ``hooked`` (hooks see the ledger messages as emits, so the scope is not used).
    A tree neither leaked nor incomplete (``ack_val ^ acc == 0``) never reaches the acker.
    """

    def __init__(self) -> None:
        self.root = 0
        self.acc = 0
        self.open = False
        self.leaked = False
        self.hooked = False


class Task:
    """What every task has: its ids, inbox, metrics, host and acker routing.

    Every method runs on the thread that runs the task (the worker's loop, or the task's own
    thread); user code is never called concurrently for one task.
    """

    kind = "task"

    def __init__(self, host: TaskHost, task_id: int, component: str, context: TopologyContext,
                 conf: dict) -> None:
        self.host = host
        self.task_id = task_id
        self.component = component
        self.context = context
        self.conf = conf
        self.inbox: deque[Tuple] = deque()
        # the inbox's bound ``popleft`` and the deque it was taken from (``inbox_popleft``)
        self._popleft_of: Any = None
        self._popleft: Any = None
        self.out_fields: dict[str, Fields] = {}  # stream -> fields, set by the worker
        # the stream a host last looked up in ``out_fields`` and its fields (``fields_of``)
        self._fields_map: dict[str, Fields] | None = None
        self._fields_stream: Any = None
        self._fields: Any = None
        self.metrics = TaskMetrics(component, task_id)
        # None until a hook is added: the hot path's only cost for tasks without hooks
        self.hooks: TaskHooks | None = None
        if context is not None:  # tests may run a task without one
            context.bind_runtime(conf, host.clock, self._add_hook)
            self.metrics.user = context.metric_registry
        ackers = host.plan.acker_tasks
        self._ackers = ackers
        self._num_ackers = len(ackers)
        self._local_ackers: list[Task | None] = [None] * len(ackers)
        self._local_slots: list[int] = []
        self.acking = bool(ackers)
        self._root_ids = id_source()
        # the thread that calls this task's code, once it runs (0: not yet, or a test
        # driving it by hand); collectors refuse calls from any other thread
        self.owner = 0
        # True for tasks whose ``apply`` runs no user code and so may be called in place of
        # queueing (the acker): saves a tuple, a queue round trip and a dispatch per ack.
        self.inline = False
        # target task id -> this task's open batch for it in another worker (the worker's)
        self._open: list[Any] | None = None
        # the scope of the spout-headed chain this task is a member of (assembly), or None
        self.scope: AckScope | None = None
        # ``send_ack`` holds one ack while ``_ack_hold`` (a plain bolt's ``process`` loop):
        # the next ack of the same root XORs into it, so a run of one tree's tuples acked in
        # a row is one ledger update (``flush_ack``)
        self._ack_hold = False
        self._ack_held = False
        self._held_root = 0
        self._held_acc = 0

    def fields_of(self, stream: str) -> Fields:
        """``out_fields[stream]``: the fields of this task's tuples on ``stream``.

        A task emits on one stream mostly, so the last answer is kept, for as long as
        ``out_fields`` is the same dict (it is replaced, never changed in place): compiled,
        a hit is two pointer tests where the dict lookup cost about 130 instructions a hop.
        Compiled, this is a C method (host.pxd): the hosts' ``deliver1`` call it.
        """
        out = self.out_fields
        if stream is not self._fields_stream or out is not self._fields_map:
            self._fields = out[stream]
            self._fields_stream = stream
            self._fields_map = out
        return self._fields

    def inbox_popleft(self) -> Any:
        """``inbox.popleft``, bound once for as long as ``inbox`` is the same deque.

        Count tasks that take turns each handle a tuple or two per ``process`` call, so
        looking ``popleft`` up per call was a lookup (and a new method object) per tuple.
        Compiled, this is a C method (host.pxd).
        """
        inbox = self.inbox
        if inbox is not self._popleft_of:
            self._popleft = inbox.popleft
            self._popleft_of = inbox
        return self._popleft

    def bind_ackers(self, tasks: dict[int, Task]) -> None:
        """Note which acker tasks live in this worker (their ledger is updated in place)."""
        self._local_ackers = [t if t is not None and t.kind == "acker" else None
                              for t in (tasks.get(a) for a in self._ackers)]
        self._local_slots = [i for i, t in enumerate(self._local_ackers) if t is not None]

    def unbind_ackers(self) -> None:
        """Send every ack through the host, none in place (a task off the loop thread)."""
        self._local_ackers = [None] * len(self._local_ackers)
        self._local_slots = []

    def new_root(self) -> int:
        """A random 64-bit root id whose acker lives in this worker, when one does.

        The acker is ``root % ackers``: steering the low residue keeps the spout's init and
        the acker's verdict inside the worker, while the id stays random.
        """
        root = self._root_ids.next()
        slots = self._local_slots
        if slots:
            n = self._num_ackers
            base = root - root % n
            slot = slots[root % len(slots)]
            # in C integers when compiled (the .pxd): Python's ints cost two 64-bit
            # remainders and their objects per spout tuple; a sum past 2**64 - 1 takes
            # the residue's id below ``base`` instead, never wrapping
            top = U64_MAX
            if base > top - slot:
                return base - (n - slot)
            return base + slot
        return root

    def acker_for(self, root: int) -> int:
        """The acker task that keeps ``root``'s ledger (fields grouping on the root id)."""
        return self._ackers[root % self._num_ackers]

    def send_ack(self, root: int, value: int) -> None:
        """Tell ``root``'s acker that edges XOR-ing to ``value`` are done."""
        scope = self.scope
        if scope is not None and scope.open and scope.root == root:
            scope.acc ^= value  # the tree is still inside its chain's call: no ledger yet
            return
        if self._ack_hold:
            # XOR is associative, and nothing else of this task reaches the ledger before
            # ``flush_ack`` (emits, fails and timeout resets flush first): the acker sees
            # the same value, one update per run of one root instead of one per tuple
            if self._ack_held:
                if root == self._held_root:
                    self._held_acc ^= value
                    return
                self._ack_now(self._held_root, self._held_acc)
            self._held_root = root
            self._held_acc = value
            self._ack_held = True
            return
        self._ack_now(root, value)

    def flush_ack(self) -> None:
        """Send the ack ``send_ack`` holds, if any."""
        if self._ack_held:
            self._ack_held = False
            self._ack_now(self._held_root, self._held_acc)

    def _ack_now(self, root: int, value: int) -> None:
        i = root % self._num_ackers
        acker = self._local_ackers[i]  # an acker task of this worker, or None
        if acker is not None:
            acker.on_ack(root, value)
        else:
            self.host.buffer_ack(self._ackers[i], self, root, value)

    def send_init(self, root: int, value: int) -> None:
        """Tell ``root``'s acker that this spout task emitted it with edges XOR-ing to ``value``."""
        i = root % self._num_ackers
        acker = self._local_ackers[i]  # an acker task of this worker, or None
        if acker is not None:
            acker.on_init(root, value, self.task_id)
        else:
            self.host.deliver(self._ackers[i], self, ACK_INIT, [root, value, self.task_id], None)

    def on_ack(self, root: int, value: int) -> None:
        """An ack from a task of this worker; only an acker task takes one."""
        raise TypeError(f"task {self.task_id} ({self.component}) is not an acker")

    def on_init(self, root: int, value: int, spout_task: int) -> None:
        """An init from a spout task of this worker; only an acker task takes one."""
        raise TypeError(f"task {self.task_id} ({self.component}) is not an acker")

    def start(self) -> None:
        """Open or prepare the user component."""

    def stop(self) -> None:
        """Close or clean up the user component (graceful stop only)."""

    def report(self, error: BaseException) -> None:
        """Report ``error`` as this task's (its host records it)."""
        self.host.report_error(self, error)

    def _add_hook(self, hook: Any) -> None:
        """``context.add_task_hook`` added (and prepared) ``hook``."""
        hooks = self.hooks
        if hooks is None:
            hooks = self.hooks = TaskHooks(self.task_id, self.report)
            if self.scope is not None:  # hooks see Storm's ledger messages: no scope
                self.scope.hooked = True
        hooks.add(hook)

    def _cleanup_hooks(self) -> None:
        """Hooks are cleaned up before the component closes, as in Storm."""
        if self.hooks is not None:
            self.hooks.cleanup()

    def process(self, budget: int) -> int:
        """Handle up to ``budget`` queued tuples; returns how many were handled."""
        inbox = self.inbox
        popleft = self.inbox_popleft()
        n = min(budget, len(inbox))
        for _ in range(n):
            self.handle(popleft())
        return n

    def handle(self, tup: Tuple) -> None:
        """Handle one tuple from the inbox."""
        raise NotImplementedError
