"""``describe``: the plan ``squall submit --dry-run`` prints (components, tasks, workers, streams)."""

from __future__ import annotations

from typing import Any

from squall.api.topology import StormTopology
from squall.runtime.plan import make_plan


def describe(name: str, conf: dict, topology: StormTopology) -> str:
    """A readable plan of ``topology`` under ``conf`` (already validated)."""
    plan = make_plan(topology, conf)
    lines = [f"topology {name!r}: {plan.num_workers} worker(s), "
             f"{len(plan.acker_tasks)} acker(s), message timeout "
             f"{conf.get('topology.message.timeout.secs')} s"]
    lines.append("components:")
    width = max((len(c) for c in topology.components), default=0)
    for cid, spec in sorted(topology.components.items()):
        tasks = plan.component_tasks.get(cid, [])
        lines.append(f"  {cid:<{width}}  {spec.kind:<5}  parallelism {spec.parallelism}  "
                     f"tasks {_ids(tasks)}  ({spec.class_name})")
    lines.append("streams:")
    for cid, spec in sorted(topology.components.items()):
        for inp in spec.inputs:
            lines.append(f"  {inp.component} --{inp.stream}--> {cid}  {_grouping(inp.grouping)}")
    lines.append("workers:")
    for w in range(plan.num_workers):
        names = [f"{ex.component}{_ids(list(ex.tasks))}" for ex in plan.worker_executors[w]]
        lines.append(f"  worker {w}: {', '.join(names)}")
    return "\n".join(lines)


def _ids(tasks: list[int]) -> str:
    if not tasks:
        return "[]"
    if len(tasks) > 2 and tasks == list(range(tasks[0], tasks[-1] + 1)):
        return f"[{tasks[0]}-{tasks[-1]}]"
    return "[" + ", ".join(map(str, tasks)) + "]"


def _grouping(g: Any) -> str:
    if g.kind == "fields" and g.fields is not None:
        return f"FIELDS({', '.join(g.fields)})"
    if g.kind == "custom":
        return f"CUSTOM({type(g.custom).__name__})"
    return str(g.kind).upper()
