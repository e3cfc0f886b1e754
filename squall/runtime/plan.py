"""Task plan: task ids, executors and their placement on workers (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from squall.api.components import StreamDef
from squall.api.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_TASKS,
    TOPOLOGY_WORKERS,
)
from squall.api.config import component_tasks as resolve_tasks
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.api.topology import ComponentSpec, StormTopology
from squall.runtime.chain import chains_of, plan_links

ACKER = "__acker"
SYSTEM = "__system"
_BY_WORKER: dict[int, tuple[TaskPlan, list[list[int]]]] = {}  # id(plan) -> (plan, tasks_by_worker)

# Streams between tasks and ackers (reserved names, never declared by users).
ACK_INIT = "__ack_init"
ACK_ACK = "__ack_ack"
ACK_FAIL = "__ack_fail"
ACK_RESET = "__ack_reset_timeout"
# a worker's acks for one acker in another worker, sent once a round: root, value, root, ...
ACK_ACKS = "__ack_acks"
SYSTEM_STREAM_FIELDS = {
    ACK_ACKS: Fields("roots_and_values"),
    ACK_INIT: Fields("root", "value", "task"),
    ACK_ACK: Fields("root", "value"),
    ACK_FAIL: Fields("root", "component", "task", "error"),  # where and why, None if unknown
    ACK_RESET: Fields("root"),
}


@dataclass(frozen=True)
class Executor:
    """An executor: one component's contiguous run of task ids."""

    component: str
    tasks: tuple[int, ...]


@dataclass
class TaskPlan:
    """Which task ids exist, which executor and worker holds each."""

    num_workers: int
    component_tasks: dict[str, list[int]]
    task_component: dict[int, str]
    executors: list[Executor]
    worker_executors: list[list[Executor]]
    streams: dict[str, dict[str, StreamDef]] = field(default_factory=dict)
    # component -> the (component, stream) pairs it subscribes to
    sources: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # set by squall.scheduler (by worker index): the host each worker must run on, and the
    # slots it holds there; empty when the plan was not scheduled onto hosts
    worker_hosts: list[str | None] = field(default_factory=list)
    worker_resources: list[dict] = field(default_factory=list)
    # the chains of bolts fused with their upstream (squall.runtime.chain), heads first
    chains: list[list[str]] = field(default_factory=list)

    def worker_tasks(self, worker: int) -> list[int]:
        """Task ids hosted by ``worker``."""
        return sorted(t for ex in self.worker_executors[worker] for t in ex.tasks)

    def tasks_by_worker(self) -> list[list[int]]:
        """``worker_tasks`` of every worker, made once per plan: shared lists, never to be changed.

        The master lists every worker's tasks at each store heartbeat and page request: at
        1,000 workers, 1,000 ``worker_tasks`` calls took 0.1 s of its loop each time.
        """
        cached = _BY_WORKER.get(id(self))
        if cached is None or cached[0] is not self:
            cached = (self, [self.worker_tasks(w) for w in range(len(self.worker_executors))])
            if len(_BY_WORKER) >= 8:  # a few plans live at once (a live rescale's old and new)
                _BY_WORKER.clear()
            _BY_WORKER[id(self)] = cached
        return cached[1]

    def task_worker(self) -> dict[int, int]:
        """Task id -> worker index."""
        return {t: w for w, exs in enumerate(self.worker_executors) for ex in exs for t in ex.tasks}

    @property
    def acker_tasks(self) -> list[int]:
        """The acker task ids (empty when acking is off)."""
        return self.component_tasks.get(ACKER, [])


def split_tasks(first: int, num_tasks: int, executors: int) -> list[tuple[int, ...]]:
    """``num_tasks`` contiguous ids from ``first`` spread over ``executors`` (sizes differ by <= 1)."""
    base, extra = divmod(num_tasks, executors)
    out, t = [], first
    for i in range(executors):
        n = base + (1 if i < extra else 0)
        out.append(tuple(range(t, t + n)))
        t += n
    return out


def num_ackers(conf: dict) -> int:
    """Acker tasks for ``conf``: ``topology.acker.executors``, default one per worker."""
    n = conf.get(TOPOLOGY_ACKER_EXECUTORS)
    workers = conf.get(TOPOLOGY_WORKERS) or 1
    if n is None:
        return int(workers)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidTopologyError(
            f"{TOPOLOGY_ACKER_EXECUTORS} must be an integer >= 0 (0 turns acking off), got {n!r}"
        )
    return n


def spec_tasks(spec: ComponentSpec, conf: dict) -> tuple[int, int]:
    """(tasks, executors) of ``spec`` under the topology configuration ``conf``.

    The component's ``topology.tasks`` and ``topology.max.task.parallelism`` win over the
    topology's (Storm's merge); system components ($checkpointspout) keep their own counts.
    """
    if spec.id.startswith(("$", "__")):
        return spec.num_tasks, spec.parallelism
    own = spec.conf
    if TOPOLOGY_TASKS in own:  # spec.num_tasks is the component's count, kept by rebalance
        own = {**own, TOPOLOGY_TASKS: spec.num_tasks}
    return resolve_tasks(spec.parallelism, own, conf)


def make_plan(topology: StormTopology, conf: dict) -> TaskPlan:
    """Plan tasks: user components sorted by id from task 1, system components last.

    Executors are dealt to workers round robin, user executors first, so that each
    component is spread as evenly as the worker count allows; a bolt chained to its upstream
    (``chain.py``) is not dealt: its k-th executor joins the worker of its chain head's k-th.
    """
    workers = conf.get(TOPOLOGY_WORKERS, 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidTopologyError(f"{TOPOLOGY_WORKERS} must be a positive integer, got {workers!r}")
    component_tasks: dict[str, list[int]] = {}
    executors: list[Executor] = []
    runs: dict[str, list[tuple[int, ...]]] = {}
    counts: dict[str, tuple[int, int]] = {}
    next_id = 1
    # user components first, sorted by id; system ones ($checkpointspout) after them
    for spec in sorted(topology.components.values(), key=lambda c: (c.id[0] in "$_", c.id)):
        num_tasks, parallelism = counts[spec.id] = spec_tasks(spec, conf)
        runs[spec.id] = split_tasks(next_id, num_tasks, parallelism)
        executors.extend(Executor(spec.id, run) for run in runs[spec.id])
        component_tasks[spec.id] = list(range(next_id, next_id + num_tasks))
        next_id += num_tasks
    links = plan_links(topology, conf, counts)
    ackers = num_ackers(conf)
    system: list[Executor] = []
    if ackers:
        for run in split_tasks(next_id, ackers, ackers):
            system.append(Executor(ACKER, run))
        component_tasks[ACKER] = list(range(next_id, next_id + ackers))
        next_id += ackers
    component_tasks[SYSTEM] = list(range(next_id, next_id + workers))
    worker_executors: list[list[Executor]] = [[] for _ in range(workers)]
    # a chained bolt's k-th executor goes where its upstream's k-th does, so that each fused
    # pair of tasks shares a worker; the others are dealt round robin as before
    dealt = [ex for ex in executors + system if ex.component not in links]
    where: dict[tuple[int, ...], int] = {}
    for i, ex in enumerate(dealt):
        worker_executors[i % workers].append(ex)
        where[ex.tasks] = i % workers
    for ex in executors:
        if ex.component in links:
            w = where[_head_run(ex, links, runs)]
            worker_executors[w].append(ex)
    order = {ex.tasks: i for i, ex in enumerate(executors + system)}
    for exs in worker_executors:
        exs.sort(key=lambda ex: order[ex.tasks])
    for w in range(workers):
        ex = Executor(SYSTEM, (next_id + w,))
        worker_executors[w].append(ex)
        system.append(ex)
    streams = {cid: dict(spec.streams) for cid, spec in topology.components.items()}
    task_component = {t: c for c, ts in component_tasks.items() for t in ts}
    sources = {cid: [(i.component, i.stream) for i in spec.inputs]
               for cid, spec in topology.components.items()}
    chains = chains_of(links)
    return TaskPlan(workers, component_tasks, task_component, executors + system,
                    worker_executors, streams, sources, chains=chains)


def _head_run(ex: Executor, links: dict, runs: dict[str, list[tuple[int, ...]]]) -> tuple[int, ...]:
    """The tasks of the executor at the head of ``ex``'s chain with ``ex``'s index."""
    k = runs[ex.component].index(ex.tasks)
    comp = ex.component
    while comp in links:
        comp = links[comp].upstream
    return runs[comp][k]
