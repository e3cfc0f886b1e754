"""``describe``: the plan ``squall submit --dry-run`` prints (components, tasks, workers, streams)."""

from __future__ import annotations

from typing import Any

from squall.api.topology import StormTopology
from squall.runtime.plan import make_plan

IN_MEMORY = "squall.state.memory.InMemoryStateProvider"


def describe(name: str, conf: dict, topology: StormTopology) -> str:
    """A readable plan of ``topology`` under ``conf`` (already validated), as it will run.

    The topology is shown with what the submit adds (the checkpoint spout and its streams
    when some bolt is stateful or the guarantee is exactly-once), with the guarantee, the
    state provider and the Spark master, so that the wiring can be checked before a submit.
    """
    from squall.runtime.exactly_once import is_exactly_once
    from squall.runtime.submission import prepare_topology

    stateful = topology.stateful
    topology = prepare_topology(topology, conf)
    plan = make_plan(topology, conf)
    lines = [f"topology {name!r}: {plan.num_workers} worker(s), "
             f"{len(plan.acker_tasks)} acker(s), message timeout "
             f"{conf.get('topology.message.timeout.secs')} s"]
    lines += _wiring(conf, stateful, is_exactly_once(conf))
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


def _wiring(conf: dict, stateful: bool, exactly_once: bool) -> list[str]:
    """The guarantee, checkpoints, state provider and Spark master lines of the plan."""
    interval = conf.get("topology.state.checkpoint.interval.ms")
    lines = [f"guarantee: {'exactly_once' if exactly_once else 'at_least_once'}"]
    if exactly_once:
        lines.append(f"checkpoints: every {interval} ms, from $checkpointspout through the spouts "
                     f"(barriers aligned in every bolt)")
    elif stateful:
        lines.append(f"checkpoints: every {interval} ms, from $checkpointspout to the stateful bolts")
    if exactly_once or stateful:
        lines.append(f"state: {conf.get('topology.state.provider') or IN_MEMORY}")
        warning = memory_state_warning(conf, stateful)
        if warning:
            lines.append(f"warning: {warning}")
    master = conf.get('squall.spark.master') or "not set: Nimbus's squall.spark.master (default local[*])"
    lines.append(f"spark master: {master}")
    return lines


def memory_state_warning(conf: dict, stateful: bool) -> str | None:
    """Why a topology with state (stateful bolts or exactly-once) on in-memory state is at risk."""
    from squall.runtime.exactly_once import is_exactly_once

    provider = conf.get("topology.state.provider") or IN_MEMORY
    if not (stateful or is_exactly_once(conf)) or provider != IN_MEMORY:
        return None
    return ("state in memory (the default) is lost with the process that holds it; on Spark or "
            "Nimbus set topology.state.provider (docs/state.md)")


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
