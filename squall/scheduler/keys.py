"""The scheduler's configuration keys (JStorm's names where JStorm has one) and their parsing.

Every bad value is refused with one line naming the key, the value and what is wanted.
"""

from __future__ import annotations

import math
from typing import Any

from squall.api.config import Setting
from squall.api.errors import InvalidTopologyError
from squall.scheduler.model import UserWorker

TASK_ON_DIFFER_NODE = "task.on.differ.node"
USE_OLD_ASSIGNMENT = "squall.use.old.assignment"
USE_USERDEFINE_ASSIGNMENT = "squall.use.userdefine.assignment"
SCHEDULER = "squall.scheduler"
RESERVED_WORKERS = "squall.scheduler.reserved.workers"
ISOLATION = "squall.scheduler.isolation"
CPU_SLOT_PERCENT = "squall.scheduler.cpu.slot.percent"
MEMORY_SLOT_MB = "squall.scheduler.memory.slot.mb"
HOST_DISK_SLOTS = "squall.scheduler.host.disk.slots"
HOST_MEMORY_MB = "squall.scheduler.host.memory.mb"
TASK_DISK_SLOTS = "squall.task.disk.slots"
# Storm's resource-aware keys, read as well as set_cpu_load / set_memory_load
STORM_CPU = "topology.component.cpu.pcore.percent"
STORM_MEMORY = "topology.component.resources.onheap.memory.mb"

SCHEDULER_SETTINGS: tuple[Setting, ...] = (
    Setting(TASK_ON_DIFFER_NODE, False, "component key: each of its tasks on a different host"),
    Setting(USE_OLD_ASSIGNMENT, False, "keep tasks on the hosts and workers they had, across rebalances"),
    Setting(USE_USERDEFINE_ASSIGNMENT, None, "workers given by hand: [{host, components, memory_mb, cpu}]"),
    Setting(SCHEDULER, "squall.scheduler.default.DefaultScheduler", "the scheduling strategy (import path)"),
    Setting(RESERVED_WORKERS, 0, "worker slots of the cluster a new topology must leave free"),
    Setting(ISOLATION, None, "{host: [topology, ...]}: hosts that only those topologies may use"),
    Setting(CPU_SLOT_PERCENT, 10.0, "size of a CPU slot, in percent of a core (a task takes one)"),
    Setting(MEMORY_SLOT_MB, 128.0, "size of a memory slot, in MB (a task takes one)"),
    Setting(HOST_DISK_SLOTS, 1, "disk slots per host (an int, or {host: n})"),
    Setting(
        HOST_MEMORY_MB, None, "memory per host for workers when the cluster does not say (None: unbounded)"
    ),
    Setting(TASK_DISK_SLOTS, 0, "component key: disk slots each of its tasks holds alone"),
)
_DEFAULTS = {s.key: s.default for s in SCHEDULER_SETTINGS}


def get(conf: dict, key: str) -> Any:
    """``conf[key]``, or the key's default."""
    value = conf.get(key)
    return _DEFAULTS[key] if value is None else value


def flag(conf: dict, key: str, where: str = "config") -> bool:
    """A boolean key (``True``/``False``, or the strings ``true``/``false`` as in YAML and JStorm)."""
    value = get(conf, key)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise InvalidTopologyError(f"{where} {key} must be true or false, got {value!r}")
    return value


def number(
    conf: dict, key: str, *, integer: bool = False, minimum: float = 0, where: str = "config"
) -> float:
    """A number key at least ``minimum``."""
    value = get(conf, key)
    kinds = int if integer else (int, float)
    if (
        isinstance(value, bool)
        or not isinstance(value, kinds)
        or value < minimum
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        kind = "an integer" if integer else "a number"
        raise InvalidTopologyError(f"{where} {key} must be {kind} >= {minimum:g}, got {value!r}")
    return value


def slots(amount: float, slot: float) -> int:
    """Slots of size ``slot`` that ``amount`` needs (at least one)."""
    return max(1, math.ceil(amount / slot - 1e-9))


def user_workers(
    conf: dict, components: set[str], cpu_slot: float, memory_slot: float
) -> tuple[UserWorker, ...]:
    """``squall.use.userdefine.assignment`` parsed, each worker's asks in slots."""
    value = conf.get(USE_USERDEFINE_ASSIGNMENT)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidTopologyError(
            f"config {USE_USERDEFINE_ASSIGNMENT} must be a list of workers "
            f"({{host, components, memory_mb, cpu}}), got {type(value).__name__}"
        )
    return tuple(_user_worker(i, w, components, cpu_slot, memory_slot) for i, w in enumerate(value))


def _user_worker(i: int, w: Any, components: set[str], cpu_slot: float, memory_slot: float) -> UserWorker:
    where = f"config {USE_USERDEFINE_ASSIGNMENT}[{i}]"
    if not isinstance(w, dict):
        raise InvalidTopologyError(f"{where} must be a dict with host, components, memory_mb, cpu; got {w!r}")
    unknown = set(w) - {"host", "components", "memory_mb", "cpu"}
    if unknown:
        raise InvalidTopologyError(
            f"{where} has unknown keys {sorted(unknown)}; known: host, components, memory_mb, cpu"
        )
    host = w.get("host")
    if host is not None and (not isinstance(host, str) or not host):
        raise InvalidTopologyError(f"{where}: host must be a host name or address, got {host!r}")
    comps = w.get("components") or {}
    if not isinstance(comps, dict):
        raise InvalidTopologyError(
            f"{where}: components must map component ids to task counts, got {comps!r}"
        )
    for comp, n in comps.items():
        if comp not in components:
            raise InvalidTopologyError(
                f"{where}: unknown component {comp!r}; known: {', '.join(sorted(components))}"
            )
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidTopologyError(
                f"{where}: task count of {comp!r} must be a positive integer, got {n!r}"
            )
    cpu, memory = w.get("cpu"), w.get("memory_mb")
    for key, v in (("cpu", cpu), ("memory_mb", memory)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
            raise InvalidTopologyError(f"{where}: {key} must be a positive number, got {v!r}")
    return UserWorker(
        host,
        dict(comps),
        None if cpu is None else slots(cpu, cpu_slot),
        None if memory is None else slots(memory, memory_slot),
    )


def isolation(conf: dict) -> dict[str, frozenset[str]]:
    """``squall.scheduler.isolation``: host -> the topologies it is reserved for."""
    value = get(conf, ISOLATION)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(h, str) and isinstance(ts, list) and all(isinstance(t, str) for t in ts)
        for h, ts in value.items()
    ):
        raise InvalidTopologyError(
            f"config {ISOLATION} must map hosts to lists of topology names, got {value!r}"
        )
    return {h: frozenset(ts) for h, ts in value.items()}


def host_disk_slots(conf: dict, host: str) -> int:
    """Disk slots ``host`` offers (``squall.scheduler.host.disk.slots``)."""
    value = get(conf, HOST_DISK_SLOTS)
    if isinstance(value, dict):
        value = value.get(host, _DEFAULTS[HOST_DISK_SLOTS])
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidTopologyError(
            f"config {HOST_DISK_SLOTS} must be an integer >= 0 or {{host: n}}, got {value!r}"
        )
    return value
