"""Turning a worker's share of the plan into task runners: unpickle, route, wire."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Protocol

import cloudpickle

from squall.api.asyncbolt import AsyncBolt
from squall.api.components import BasicBolt, Bolt, Spout, StatefulBolt
from squall.api.config import (
    TOPOLOGY_DISABLE_LOADAWARE_MESSAGING,
    TOPOLOGY_LOCALITYAWARE_HIGHER_BOUND,
    TOPOLOGY_LOCALITYAWARE_LOWER_BOUND,
    task_conf,
)
from squall.api.context import TopologyContext, WorkerTopologyContext
from squall.api.errors import TopologyStartError
from squall.api.fields import Fields
from squall.runtime.chain import links_of, partners
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM, Barrier
from squall.runtime.collectors import StreamRoute
from squall.runtime.exactly_once import is_exactly_once
from squall.runtime.exactly_once_tasks import ExactlyOnceSpoutTask, aligned
from squall.runtime.fused import ChainHost
from squall.runtime.host import AckScope, Task, TaskHost
from squall.runtime.keygroups import num_key_groups
from squall.runtime.plan import ACKER, SYSTEM, SYSTEM_STREAM_FIELDS
from squall.runtime.routing import ConstantRouter, DirectOnly, LoadAwareness, make_router
from squall.runtime.stateful import StatefulBoltTask
from squall.runtime.tasks import AckerTask, BoltTask, SpoutTask


class Worker(Protocol):
    """The worker as assembly sees it (``worker.Worker`` is one); ``host`` hosts its tasks."""

    topology_name: str
    topology: Any
    conf: dict
    plan: Any
    index: int
    tasks: dict[int, Task]
    threads: list[Any]

    def call(self, fn: Callable[[], None]) -> Any:
        """Run ``fn`` on the loop thread (``Worker.call``)."""


def make_tasks(worker: Worker, host: TaskHost, tasks: dict[int, Task]) -> dict[tuple[str, str], Fields]:
    """Make worker ``worker``'s tasks into ``tasks`` (task id -> task), hosted by ``host``.

    Returns the fields of every (component, stream), the system's streams included.
    """
    plan = worker.plan
    fields: dict[tuple[str, str], Fields] = {}
    for comp, streams in plan.streams.items():
        for stream, sdef in streams.items():
            fields[(comp, stream)] = sdef.fields
    for comp in (ACKER, SYSTEM, *plan.streams):
        for stream, sys_fields in SYSTEM_STREAM_FIELDS.items():
            fields[(comp, stream)] = sys_fields
    worker_tasks = plan.worker_tasks(worker.index)
    local = set(worker_tasks)
    # a chain's upstream task -> (chained stream, partner task): its host runs the partner
    fused = partners(links_of(plan.chains, worker.topology), plan.component_tasks, local)
    scopes = ack_scopes(worker, fused)
    chain_hosts = []
    for ex in plan.worker_executors[worker.index]:
        for task_id in ex.tasks:
            task_host = host
            forward = fused.get(task_id)
            scope = scopes.get(task_id)
            if forward is not None:
                task_host = ChainHost(host, *forward, scope=scope)
                chain_hosts.append(task_host)
            elif scope is not None:  # the chain's tail: what it sends leaves the chain
                task_host = ChainHost(host, None, -1, scope=scope)
            task = make_task(worker, task_host, ex.component, task_id, worker_tasks, local, forward)
            if task is not None:
                task.out_fields = {s: f for (c, s), f in fields.items() if c == ex.component}
                task.scope = scope
                tasks[task_id] = task
    for chain_host in chain_hosts:
        chain_host.bind(tasks[chain_host.target])
    for task in tasks.values():
        task.bind_ackers(tasks)
    return fields


def ack_scopes(worker: Worker, fused: dict[int, tuple[str, int]]) -> dict[int, AckScope]:
    """Task id -> its chain's ``AckScope``, for each task of a chain headed by a spout task.

    Only with acking on: a spout's tracked emit runs its whole chain in one call, so a tree
    that completes there need not reach the acker (``host.AckScope``).
    """
    plan = worker.plan
    if not plan.acker_tasks:
        return {}
    component_of = {t: c for c, ts in plan.component_tasks.items() for t in ts}
    downs = {down for _, down in fused.values()}
    scopes: dict[int, AckScope] = {}
    for head in fused:
        comp = worker.topology.components.get(component_of[head])
        if head in downs or comp is None or comp.kind != "spout":
            continue
        scope = AckScope()
        task_id: int | None = head
        while task_id is not None:
            scopes[task_id] = scope
            forward = fused.get(task_id)
            task_id = forward[1] if forward is not None else None
    return scopes


def make_task(worker: Worker, host: TaskHost, comp: str, task_id: int, worker_tasks: list[int],
              local: set[int], forward: tuple[str, int] | None = None) -> Task | None:
    """The runner of task ``task_id`` of ``comp`` in ``worker`` (None for ``__system``).

    ``host`` is what the task will ask (deliver, clock, errors): the worker itself, or a
    ``ChainHost`` for a chain's upstream task, whose ``forward`` (stream, partner task) then
    routes that stream to the partner alone. Each task unpickles its own instance of the
    component, so tasks never share one.
    """
    ctx = TopologyContext(worker.topology_name, worker.plan, worker_tasks, task_id, worker.index,
                          topology=worker.topology, call_soon=task_caller(worker, task_id))
    if comp == SYSTEM:
        return None  # the system task only names the source of ticks
    if comp == ACKER:
        return AckerTask(host, task_id, comp, ctx, worker.conf)
    spec = worker.topology.components[comp]
    conf = task_conf(worker.conf, spec.conf)
    try:
        obj = cloudpickle.loads(spec.payload)
    except Exception as e:  # noqa: BLE001 - any unpickling failure stops the start
        raise TopologyStartError(
            f"component {comp!r} ({spec.class_name}) cannot be unpickled in worker "
            f"{worker.index}: {type(e).__name__}: {e}"
        ) from e
    routes = make_routes(worker, comp, task_id, ctx, local, forward)
    exactly_once = is_exactly_once(worker.conf) and comp != CHECKPOINT_SPOUT
    if isinstance(obj, Spout):
        spout_cls = ExactlyOnceSpoutTask if exactly_once else SpoutTask
        return spout_cls(host, task_id, comp, ctx, conf, obj, routes)
    if not isinstance(obj, (Bolt, BasicBolt)):
        raise TopologyStartError(f"component {comp!r} is neither a spout nor a bolt")
    if isinstance(obj, AsyncBolt):
        from squall.runtime.async_tasks import AsyncBoltTask  # asyncio only where used

        cls: type[BoltTask] = AsyncBoltTask
    else:
        # a sink that declares ``follows_checkpoints`` (DataFrameWriterBolt) runs as a
        # stateful bolt where checkpoints flow: its writes are staged and committed with them
        checkpointed = any(inp.stream == CHECKPOINT_STREAM for inp in spec.inputs)
        stateful = isinstance(obj, StatefulBolt) or (
            checkpointed and getattr(type(obj), "follows_checkpoints", False) is True)
        cls = StatefulBoltTask if stateful else BoltTask
        if exactly_once:
            cls = aligned(cls)
    bolt = cls(host, task_id, comp, ctx, conf, obj, routes)
    senders = sum(len(worker.plan.component_tasks[inp.component])
                  for inp in spec.inputs if inp.stream == CHECKPOINT_STREAM)
    if senders:
        bolt.barrier = Barrier(senders)
    return bolt


def task_caller(worker: Worker, task_id: int) -> Callable[[Callable[[], None]], None]:
    """``context.call_soon`` of task ``task_id``: ``fn`` runs on the thread that runs the task.

    That is the task's own thread when it has one (``set_threaded``), else the loop thread.
    Which one is known once the worker is built, so it is looked up on the first call.
    """
    post: list[Callable[[Callable[[], None]], Any]] = []

    def call_soon(fn: Callable[[], None]) -> None:
        if not post:
            own = [t for t in worker.threads if t.task.task_id == task_id]
            post.append(own[0].post if own else worker.call)
        post[0](fn)

    return call_soon


def make_routes(worker: Worker, comp: str, task_id: int, ctx: WorkerTopologyContext,
                local: set[int], forward: tuple[str, int] | None = None) -> dict[str, StreamRoute]:
    """Per declared stream of ``comp``: its arity and the routers of its subscribers.

    ``forward`` (stream, task): that stream's one subscriber is fused with this task, so
    every tuple on it goes to that task.
    """
    topology, plan = worker.topology, worker.plan
    load = load_awareness(worker)
    key_groups = num_key_groups(worker.conf)
    routes = {}
    for stream, sdef in topology.components[comp].streams.items():
        routers = []
        direct = None
        for sub, grouping in topology.subscribers(comp, stream):
            if grouping.kind == "custom":
                grouping = copy.deepcopy(grouping)  # each emitting task prepares its own
            router = make_router(
                grouping, task=task_id, targets=plan.component_tasks[sub],
                local_tasks=local, stream=stream, stream_fields=sdef.fields,
                context=ctx, component=sub, source=comp, load=load, key_groups=key_groups,
            )
            if isinstance(router, DirectOnly):
                direct = DirectOnly(sorted(set(direct.targets if direct else ()) | router.targets))
            else:
                routers.append(router)
        if sdef.direct:
            direct = direct or DirectOnly([])
        if forward is not None and forward[0] == stream:
            routers = [ConstantRouter([forward[1]])]
        routes[stream] = StreamRoute(stream, len(sdef.fields), routers, direct)
    return routes


def load_awareness(worker: Worker) -> LoadAwareness | None:
    """How shuffles of ``worker`` see its queues; None when load-aware messaging is disabled."""
    conf = worker.conf
    if conf.get(TOPOLOGY_DISABLE_LOADAWARE_MESSAGING):
        return None
    capacity = float(conf.get("topology.executor.receive.buffer.size") or 32768)
    tasks = worker.tasks  # filled by the time anything is emitted

    def mean_load(targets: list[int]) -> float:
        return sum(len(tasks[t].inbox) for t in targets) / (capacity * len(targets))

    return LoadAwareness(
        mean_load,
        high=float(conf.get(TOPOLOGY_LOCALITYAWARE_HIGHER_BOUND, 0.8)),
        low=float(conf.get(TOPOLOGY_LOCALITYAWARE_LOWER_BOUND, 0.2)),
    )
