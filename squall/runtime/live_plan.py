"""A live rescale's decisions (pure): whether it may run live, and the plan it leads to.

A live rescale keeps every task that stays, with its id, worker and objects: the tasks a
component gains get new ids above every id in use (so a task id never names two tasks in one
run), each an executor of its own on the worker that hosts the fewest of the component's
tasks (ties: the fewest tasks, then the lowest index); the tasks it loses are its highest
ids. Workers only ever grow: a new worker gets the next index and a ``__system`` task id of
its own. ``live_refusal`` says in one line why a change cannot run live (then the cluster
restarts the topology as before and the ``rescale`` record says why).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from squall.api.topology import StormTopology
from squall.runtime.checkpoint import CHECKPOINT_STREAM
from squall.runtime.exactly_once import is_exactly_once
from squall.runtime.plan import SYSTEM, Executor, TaskPlan

THREADED = "squall.task.threaded"
# groupings whose routers keep no task ids of their own: their targets may change between
# two tuples
LIVE_GROUPINGS = frozenset({"shuffle", "local_or_shuffle", "none", "fields", "partial_key", "all"})


def task_changes(plan: TaskPlan, counts: dict[str, int]) -> dict[str, tuple[int, int]]:
    """``{component: (old task count, new)}`` for the components whose task count changes."""
    return {c: (len(plan.component_tasks[c]), n) for c, n in sorted(counts.items())
            if len(plan.component_tasks[c]) != n}


def upstream_components(topology: StormTopology, component: str) -> list[str]:
    """The user components ``component`` reads from (its routers' owners)."""
    return sorted({i.component for i in topology.components[component].inputs
                   if not i.component.startswith(("$", "__"))})


def live_refusal(topology: StormTopology, conf: dict, plan: TaskPlan,
                 changes: dict[str, tuple[int, int]], num_workers: int | None,
                 spouts: bool = False) -> str | None:
    """Why ``changes`` cannot be made while the topology runs, or None when they can.

    ``spouts``: the cluster moves a spout live (``runtime.live_spout``; LocalCluster, and
    Spark under exactly-once).
    """
    if num_workers is not None and num_workers < plan.num_workers:
        return f"fewer workers ({plan.num_workers} -> {num_workers}) need a restart"
    if not changes:
        return "no task count changes (executors alone are regrouped by a restart)"
    if spouts and any(topology.components[c].kind == "spout" for c in changes):
        return spout_refusal(topology, conf, plan, changes, num_workers)
    keyed = [c for c in changes if topology.components[c].stateful]
    if keyed:
        if len(changes) > 1:
            return f"component {keyed[0]!r}: a keyed stateful component rescales live alone"
        if num_workers not in (None, plan.num_workers):
            return f"component {keyed[0]!r}: a live move of key groups keeps the worker count"
        reason = _keyed_refusal(topology, conf, plan, keyed[0])
        return None if reason is None else f"component {keyed[0]!r}: {reason}"
    if is_exactly_once(conf):
        return "exactly-once topologies rescale stateless components by a restart"
    for comp in changes:
        reason = _component_refusal(topology, conf, plan, comp)
        if reason is not None:
            return f"component {comp!r}: {reason}"
    return None


def spout_refusal(topology: StormTopology, conf: dict, plan: TaskPlan,
                  changes: dict[str, tuple[int, int]], num_workers: int | None) -> str | None:
    """Why a change of spout task counts cannot run live, or None (``changes`` names a spout)."""
    spouts = [c for c in changes if topology.components[c].kind == "spout"]
    comp = spouts[0]
    if len(changes) > 1:
        return f"spout {comp!r}: a spout rescales live alone (here with {sorted(changes)})"
    if num_workers not in (None, plan.num_workers):
        return f"spout {comp!r}: a live spout move keeps the worker count"
    for chain in plan.chains:
        if comp in chain:
            return f"spout {comp!r}: it runs fused in the chain {' -> '.join(chain)}"
    if {**conf, **topology.components[comp].conf}.get(THREADED):
        return f"spout {comp!r}: it runs on a thread of its own ({THREADED})"
    if is_exactly_once(conf):
        obj = _component(topology, comp)
        if obj is not None and getattr(obj, "merge_positions", None) is None:
            return f"spout {comp!r}: it has no merge_positions() to split its positions"
    return None


def _component(topology: StormTopology, comp: str) -> Any:
    from squall.runtime.exactly_once_checks import component_object

    return component_object(topology.components[comp])


def _keyed_refusal(topology: StormTopology, conf: dict, plan: TaskPlan, comp: str) -> str | None:
    """Why the keyed stateful ``comp`` cannot move its key groups live, or None."""
    spec = topology.components[comp]
    if "Windowed" in spec.class_name:
        return "windowed state (its windows do not move live)"
    data = [i for i in spec.inputs if i.stream != CHECKPOINT_STREAM]
    if not data or any(i.grouping.kind != "fields" for i in data):
        return "its state is kept per task, not by key group (an input is not a fields grouping)"
    return _wiring_refusal(topology, conf, plan, comp, downstream=True)


def _wiring_refusal(topology: StormTopology, conf: dict, plan: TaskPlan, comp: str,
                    downstream: bool = False) -> str | None:
    """Why the routes feeding ``comp`` (and, ``downstream``, the barriers after it) cannot switch."""
    involved = {comp, *upstream_components(topology, comp)}
    if downstream:
        involved |= {d.id for d in topology.components.values()
                     if any(i.component == comp for i in d.inputs)}
    for chain in plan.chains:
        if involved & set(chain):
            return f"it or a neighbour runs fused in the chain {' -> '.join(chain)}"
    for cid in sorted(involved):
        own = {**conf, **topology.components[cid].conf}
        if own.get(THREADED):
            return f"{cid!r} runs on a thread of its own ({THREADED})"
        if topology.components[cid].asynchronous:
            return f"{cid!r} is an AsyncBolt"
    return None


def _component_refusal(topology: StormTopology, conf: dict, plan: TaskPlan, comp: str) -> str | None:
    spec = topology.components[comp]
    if spec.kind == "spout":
        return "a spout (this cluster rescales a spout by a restart)"
    if "Windowed" in spec.class_name:
        return "windowed state (its windows do not move live)"
    if spec.asynchronous:
        return "an AsyncBolt"
    for inp in spec.inputs:
        if inp.stream == CHECKPOINT_STREAM:
            return "checkpoint barriers count its tasks (a checkpointed topology restarts)"
        if inp.grouping.kind not in LIVE_GROUPINGS:
            return (f"{inp.grouping.kind} grouping from {inp.component!r} "
                    f"(it names tasks, so it does not move live)")
    for down in topology.components.values():
        if any(i.component == comp and i.stream == CHECKPOINT_STREAM for i in down.inputs):
            return "checkpoint barriers count its tasks (a checkpointed topology restarts)"
    return _wiring_refusal(topology, conf, plan, comp)


def live_plan(plan: TaskPlan, changes: dict[str, tuple[int, int]],
              num_workers: int | None = None) -> TaskPlan:
    """The plan after ``changes``: kept tasks stay put, new ids above every id in use."""
    workers = max(plan.num_workers, num_workers or 0)
    component_tasks = {c: list(ts) for c, ts in plan.component_tasks.items()}
    worker_executors = [list(exs) for exs in plan.worker_executors] + [
        [] for _ in range(workers - plan.num_workers)]
    next_id = max(plan.task_component) + 1
    for w in range(plan.num_workers, workers):  # a new worker's ``__system`` task
        component_tasks[SYSTEM].append(next_id)
        worker_executors[w].append(Executor(SYSTEM, (next_id,)))
        next_id += 1
    for comp, (old, new) in changes.items():
        tasks = component_tasks[comp]
        if new < old:
            gone = set(tasks[new:])
            del tasks[new:]
            worker_executors = [_without(exs, gone) for exs in worker_executors]
            continue
        for task in range(next_id, next_id + new - old):
            w = _pick_worker(worker_executors, comp)
            worker_executors[w].append(Executor(comp, (task,)))
            tasks.append(task)
        next_id += new - old
    task_component = {t: c for c, ts in component_tasks.items() for t in ts}
    executors = [ex for exs in worker_executors for ex in exs]
    return replace(plan, num_workers=workers, component_tasks=component_tasks,
                   task_component=task_component, executors=executors,
                   worker_executors=worker_executors,
                   worker_hosts=list(plan.worker_hosts), worker_resources=list(plan.worker_resources))


def _without(executors: list[Executor], gone: set[int]) -> list[Executor]:
    out = []
    for ex in executors:
        kept = tuple(t for t in ex.tasks if t not in gone)
        if kept:
            out.append(ex if len(kept) == len(ex.tasks) else Executor(ex.component, kept))
    return out


def _pick_worker(worker_executors: list[list[Executor]], comp: str) -> int:
    """The worker hosting the fewest of ``comp``'s tasks, then the fewest tasks, then the lowest."""
    def load(w: int) -> tuple[int, int, int]:
        exs = worker_executors[w]
        mine = sum(len(ex.tasks) for ex in exs if ex.component == comp)
        return mine, sum(len(ex.tasks) for ex in exs), w
    return min(range(len(worker_executors)), key=load)


def restart_record(old: TaskPlan, new: TaskPlan, reason: str) -> dict:
    """A ``rescale`` record (API.md, Rescaling) for a rescale done by restarting the topology."""
    counts = {c: len(ts) for c, ts in new.component_tasks.items() if not c.startswith(("$", "__"))}
    changes = task_changes(old, {c: n for c, n in counts.items() if c in old.component_tasks})
    return {"status": "running", "components": {c: [o, n] for c, (o, n) in changes.items()},
            "live": False, "moved_key_groups": 0, "moved_bytes": 0, "pause_ms": 0.0,
            "reason": reason}
