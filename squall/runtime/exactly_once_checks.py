"""What submit refuses in exactly-once mode (``topology.guarantee: exactly_once``).

Every door a topology comes in by (``LocalCluster``, ``SparkCluster``, the client before an
upload, Nimbus on the upload) calls ``prepare_conf``, which calls ``check_exactly_once``:

- every spout must be a ``SeekableSpout`` (a shell spout is not): its position goes into
  each checkpoint and it is sought back after a failure;
- checkpointing must be on: ``topology.state.checkpoint.interval.ms`` above 0 and ackers
  (checkpoints complete through the ackers' tuple trees);
- no component may declare ``follows_checkpoints = False`` (a sink that writes out at once,
  as the Kafka bolt without a transactional producer: what it wrote before a rollback is
  written again);
- no ``AsyncBolt`` and no multilang ``ShellBolt``: their executes complete after the barrier
  has passed them, so their output would cross it.

Each refusal is one line naming the components. The classes are found by unpickling each
component. One that cannot be unpickled here (Nimbus checks an upload without the user's
code on its path) is left to the doors that have the code: the client before the upload,
the Spark application master before it launches the workers, and ``LocalCluster``.
"""

from __future__ import annotations

from typing import Any

import cloudpickle

from squall.api.components import SeekableSpout
from squall.api.errors import InvalidTopologyError
from squall.api.topology import ComponentSpec, StormTopology

INTERVAL_KEY = "topology.state.checkpoint.interval.ms"
# topology.max.spout.pending's default in exactly-once mode (exactly_once_tasks reads it)
MAX_PENDING_KEY = "squall.exactly_once.max.spout.pending"


def _names(cids: list[str]) -> str:
    return ", ".join(repr(c) for c in sorted(cids))


def component_object(spec: ComponentSpec) -> Any:
    """The component instance pickled in ``spec``; None if it cannot be unpickled here."""
    try:
        return cloudpickle.loads(spec.payload)
    except Exception:  # noqa: BLE001 - a bad pickle can raise anything; the workers report it
        return None


def check_exactly_once(conf: dict, topology: StormTopology) -> None:
    """Raise ``InvalidTopologyError`` (one line, naming components) if ``topology`` does not qualify."""
    spouts = [c for c in topology.spouts if not c.id.startswith(("$", "__"))]
    interval = conf.get(INTERVAL_KEY)
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once needs checkpointing on, but {INTERVAL_KEY} is "
            f"{interval!r}: spouts {_names([c.id for c in spouts])} would never record a position; "
            f"set it above 0")
    if conf.get("topology.acker.executors") == 0:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once needs checkpointing on, but topology.acker.executors "
            f"is 0 (checkpoints complete through the ackers): spouts "
            f"{_names([c.id for c in spouts])} would never record a position")
    loaded = {cid: component_object(spec) for cid, spec in topology.components.items()
              if not cid.startswith(("$", "__"))}
    objects = {cid: obj for cid, obj in loaded.items() if obj is not None}
    plain = [c.id for c in spouts if c.id in objects and not isinstance(objects[c.id], SeekableSpout)]
    if plain:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once needs seekable spouts (squall.SeekableSpout: "
            f"position() and seek()); not seekable: {_names(plain)}")
    unaligned = [cid for cid, obj in objects.items()
                 if getattr(obj, "follows_checkpoints", None) is False]  # class or instance
    if unaligned:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once cannot undo writes of components that do not "
            f"follow checkpoints (follows_checkpoints = False): {_names(unaligned)}; write "
            f"through a sink that does (squall.connectors.redis.RedisStreamBolt, "
            f"DataFrameWriterBolt, or a StatefulBolt that writes at commit)")
    pending = conf.get(MAX_PENDING_KEY)
    if pending is not None and (isinstance(pending, bool) or not isinstance(pending, int) or pending < 1):
        raise InvalidTopologyError(f"config {MAX_PENDING_KEY} must be a positive integer, got {pending!r}")
    late = [cid for cid, obj in objects.items() if _completes_later(obj)]
    if late:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once does not support AsyncBolt or ShellBolt (their "
            f"executes end after the checkpoint barrier passed): {_names(late)}")


def _completes_later(obj: Any) -> bool:
    """Whether ``obj``'s executes finish after ``execute`` returns (async or a subprocess)."""
    from squall.api.asyncbolt import AsyncBolt

    # by name: the runtime does not import squall.multilang, which is built on top of it
    shell = any(f"{c.__module__}.{c.__qualname__}" == "squall.multilang.bolt.ShellBolt"
                for c in type(obj).__mro__)
    return shell or isinstance(obj, AsyncBolt)


def check_spout_rescale(conf: dict, old: StormTopology, new: StormTopology) -> None:
    """Refuse a rebalance that changes the task count of a spout that cannot merge positions.

    In exactly-once mode each spout task's committed position is in its own state; a new
    task count starts a new generation whose positions the spout's ``merge_positions``
    makes from the old ones (``ExactlyOnceSpoutTask.open_state``). A spout without it would
    fail every checkpoint after the rebalance, so the rebalance is refused up front.
    """
    from squall.runtime.exactly_once import is_exactly_once

    if not is_exactly_once(conf):
        return
    for spec in new.spouts:
        before = old.components.get(spec.id)
        if spec.id.startswith(("$", "__")) or before is None or before.num_tasks == spec.num_tasks:
            continue
        obj = component_object(spec)
        if obj is not None and getattr(obj, "merge_positions", None) is None:
            raise InvalidTopologyError(rescale_refusal(spec.id, before.num_tasks, spec.num_tasks))


def check_durable_state(conf: dict, cluster: str) -> None:
    """Refuse exactly-once on ``cluster`` (a cluster of several processes) with in-memory state.

    The in-memory provider keeps each worker's states in that worker's process: a worker
    that dies takes its tasks' committed states with it, and recovery then finds them
    missing (``MissingStateError``, for ever) or, with the checkpoint spout's record gone
    too, starts over and counts again. ``LocalCluster`` runs every worker in one process,
    so it is not refused there.
    """
    from squall.runtime.exactly_once import is_exactly_once
    from squall.state import DEFAULT_PROVIDER, PROVIDER_KEY, STORM_PROVIDERS

    if not is_exactly_once(conf) or int(conf.get("topology.workers") or 1) < 2:
        return
    path = conf.get(PROVIDER_KEY) or DEFAULT_PROVIDER
    path = STORM_PROVIDERS.get(path, path)
    if path == "squall.state.memory.InMemoryStateProvider":
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once on {cluster} with {conf.get('topology.workers')} "
            f"workers needs durable state, but topology.state.provider is {path} (its states die "
            f"with their worker); set topology.state.provider to "
            f"squall.state.redis.RedisStateProvider")


def rescale_refusal(component: str, old: int, new: int) -> str:
    """The one-line error for a spout whose task count changed but cannot merge positions."""
    return (f"spout {component!r} cannot go from {old} to {new} tasks under topology.guarantee "
            f"exactly_once: it has no merge_positions() to split its committed positions among "
            f"the new tasks; rebalance it back to {old} tasks")
