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
            f"follow checkpoints (follows_checkpoints = False): {_names(unaligned)}")
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
    from squall.runtime.exactly_once_tasks import rescale_refusal

    if not is_exactly_once(conf):
        return
    for spec in new.spouts:
        before = old.components.get(spec.id)
        if spec.id.startswith(("$", "__")) or before is None or before.num_tasks == spec.num_tasks:
            continue
        obj = component_object(spec)
        if obj is not None and getattr(obj, "merge_positions", None) is None:
            raise InvalidTopologyError(rescale_refusal(spec.id, before.num_tasks, spec.num_tasks))
