"""Checks made when a topology is submitted, shared by every cluster."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from squall.api.conf_checks import check_setting, check_settings
from squall.api.config import TOPOLOGY_TASKS, check_component_conf, effective_conf
from squall.api.errors import InvalidTopologyError
from squall.api.topology import StormTopology
from squall.runtime.exactly_once import AT_LEAST_ONCE, GUARANTEE_KEY, is_exactly_once
from squall.runtime.exactly_once_checks import check_exactly_once
from squall.runtime.keygroups import KEY_GROUPS, num_key_groups
from squall.runtime.window_checks import check_windows

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def check_name(name: object) -> str:
    """A topology name: letters, digits, ``_.-``, at most 128 characters."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InvalidTopologyError(
            f"topology name {name!r} is invalid; use letters, digits, '_', '.', '-' "
            f"(at most 128, starting with a letter or digit)"
        )
    return name


def prepare_conf(conf: Any, topology: Any) -> dict:
    """Validate ``conf`` and ``topology``; returns the effective configuration."""
    if not isinstance(topology, StormTopology):
        raise InvalidTopologyError(
            f"expected a topology from TopologyBuilder.create_topology(), got "
            f"{type(topology).__name__}"
        )
    if conf is None:
        conf = {}
    if not isinstance(conf, dict):
        raise InvalidTopologyError(f"topology config must be a dict (or Config), got {type(conf).__name__}")
    merged = effective_conf(conf)
    check_setting(GUARANTEE_KEY, merged.get(GUARANTEE_KEY, AT_LEAST_ONCE))
    exactly_once = is_exactly_once(merged)
    if exactly_once:  # first: its refusals name the components (checkpointing off included)
        check_exactly_once(merged, topology)
    check_settings(merged)  # the type and range of every key squall knows
    for comp in topology.components.values():
        check_component_conf(comp.id, comp.conf)  # again: a topology may not come from the builder
    check_windows(merged, topology)
    check_key_group_tasks(merged, topology)
    if topology.stateful or exactly_once:
        interval = merged["topology.state.checkpoint.interval.ms"]
        timeout_ms = float(merged["topology.message.timeout.secs"]) * 1000.0
        if interval >= timeout_ms:
            raise InvalidTopologyError(
                f"topology.state.checkpoint.interval.ms ({interval}) must be below "
                f"topology.message.timeout.secs ({merged['topology.message.timeout.secs']} s): "
                f"stateful bolts hold acks until a checkpoint commits"
            )
        if merged.get("topology.acker.executors") == 0:
            raise InvalidTopologyError(
                "stateful bolts need acking: checkpoints complete through the ackers; "
                "set topology.acker.executors above 0"
            )
    return merged


def prepare_topology(topology: StormTopology, conf: dict | None = None) -> StormTopology:
    """The topology as it runs: with the checkpoint spout when some bolt is stateful.

    ``conf`` (the effective configuration) says the guarantee: in exactly-once mode the
    checkpoints always flow, and through the spouts.
    """
    from squall.runtime.checkpoint_spout import add_checkpointing

    return add_checkpointing(topology, exactly_once=is_exactly_once(conf))


def with_parallelism(topology: StormTopology, parallelism: dict[str, int]) -> StormTopology:
    """``topology`` with new parallelism per component (task counts grow with it)."""
    components = dict(topology.components)
    for cid, n in parallelism.items():
        spec = components.get(cid)
        if spec is None:
            raise InvalidTopologyError(
                f"rebalance names unknown component {cid!r}; known: {', '.join(sorted(components))}"
            )
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidTopologyError(
                f"rebalance: parallelism of {cid!r} must be a positive integer, got {n!r}"
            )
        tasks = n if spec.num_tasks == spec.parallelism else max(spec.num_tasks, n)
        # the component's own task count from now on: a topology-wide topology.tasks (the
        # count at submit) no longer caps it, so a rebalance may go past it (key groups)
        components[cid] = replace(spec, parallelism=n, num_tasks=tasks,
                                  conf={**spec.conf, TOPOLOGY_TASKS: tasks})
    return StormTopology(components)


def check_key_group_tasks(conf: dict, topology: StormTopology) -> None:
    """Refuse a fields-grouped component with more tasks than ``topology.key.groups``."""
    from squall.runtime.plan import spec_tasks

    k = num_key_groups(conf)
    for spec in topology.components.values():
        if any(inp.grouping.kind == "fields" for inp in spec.inputs):
            tasks, _ = spec_tasks(spec, conf)
            if tasks > k:
                raise InvalidTopologyError(
                    f"{spec.id!r} would have {tasks} tasks, more than its {k} key groups "
                    f"({KEY_GROUPS}): a fields-grouped component's parallelism is at most that")
