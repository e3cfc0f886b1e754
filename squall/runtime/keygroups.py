"""Key groups: the fixed partition of keys that fields groupings and keyed state share.

A key (the value of a one-field grouping, or the list of values of several fields) belongs
to key group ``stable_hash(key) % K``, where ``K`` is ``topology.key.groups`` (default
4096), fixed for a topology's life. A routing table maps each key group to a task INDEX of
the subscribing component: the fields grouping sends a tuple to
``targets[table[key_group(key, K)]]``, and a stateful task keeps the keys of the key groups
it owns in one namespace per key group, so a rescale moves key groups between tasks and
never copies keys between task namespaces. ``default_table`` gives each task a contiguous
range of key groups, the table a topology starts from and a restart rebuilds.

>>> default_table(3, 8)
[0, 0, 0, 1, 1, 1, 2, 2]
>>> moved([0, 0, 1, 1], [0, 1, 1, 2])
{1: (0, 1), 3: (1, 2)}
"""

from __future__ import annotations

from typing import Any

from squall.runtime.hashing import stable_hash

KEY_GROUPS = "topology.key.groups"
DEFAULT_KEY_GROUPS = 4096


def num_key_groups(conf: Any) -> int:
    """``topology.key.groups`` of ``conf`` (a mapping, or None: the default)."""
    k = (conf or {}).get(KEY_GROUPS)
    if k is None:
        return DEFAULT_KEY_GROUPS
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{KEY_GROUPS} must be a positive integer, got {k!r}")
    return k


def key_group(values: Any, num_key_groups: int) -> int:
    """The key group of ``values``: the grouping's value, or the list of several fields' values."""
    return stable_hash(values) % num_key_groups


def default_table(num_tasks: int, num_key_groups: int) -> list[int]:
    """Task index per key group: contiguous ranges, key group ``g`` to ``g * n // K``."""
    if num_tasks < 1 or num_tasks > num_key_groups:
        raise ValueError(f"{num_tasks} tasks cannot share {num_key_groups} key groups "
                         f"({KEY_GROUPS}): a component's parallelism is at most {num_key_groups}")
    return [g * num_tasks // num_key_groups for g in range(num_key_groups)]


def owned_groups(table: list[int], index: int) -> list[int]:
    """The key groups ``table`` gives task index ``index``, ascending."""
    return [g for g, owner in enumerate(table) if owner == index]


def moved(old: list[int], new: list[int]) -> dict[int, tuple[int, int]]:
    """Key groups whose owner differs between two tables: ``{group: (old_index, new_index)}``."""
    if len(old) != len(new):
        raise ValueError(f"routing tables of {len(old)} and {len(new)} key groups: "
                         f"{KEY_GROUPS} cannot change")
    return {g: (a, b) for g, (a, b) in enumerate(zip(old, new, strict=True)) if a != b}


# groupings whose choice of task is not a key group's owner: a live rescale cannot move them
NOT_BY_KEY_GROUP = {
    "direct": "direct grouping (the emitter picks the task id)",
    "custom": "a custom grouping (it picks task ids)",
    "global": "global grouping (every tuple to the lowest task id)",
    "partial_key": "partial key grouping (a key on two tasks)",
}


def live_rescale_blocker(topology: Any, component: str) -> str | None:
    """Why ``component`` of ``topology`` cannot be rescaled live (one line), or None if it can.

    Its state and routing follow key groups unless it reads a stream by direct, custom,
    global or partial key grouping, or keeps windowed state; such a component is restarted
    (today's rebalance), not moved live. Shuffle-like groupings and all grouping move freely.
    """
    spec = topology.components[component]
    if "WindowedBoltExecutor" in spec.class_name:
        return f"{component!r} keeps windowed state, which is not kept by key group"
    for inp in spec.inputs:
        reason = NOT_BY_KEY_GROUP.get(inp.grouping.kind)
        if reason is not None:
            return f"{component!r} reads {inp.component}:{inp.stream} by {reason}"
    return None
