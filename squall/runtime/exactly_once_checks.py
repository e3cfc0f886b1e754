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
- no ``AsyncBolt``: its executes complete after the barrier has passed it.

Each refusal is one line naming the components. The classes are found by unpickling each
component (once, here); a component that cannot be unpickled is refused too, since nothing
can then be known of it.
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
    """The component instance pickled in ``spec``; ``InvalidTopologyError`` if it cannot load."""
    try:
        return cloudpickle.loads(spec.payload)
    except Exception as e:  # noqa: BLE001 - a bad pickle can raise anything
        raise InvalidTopologyError(
            f"exactly_once: component {spec.id!r} ({spec.class_name}) cannot be unpickled to "
            f"check it: {type(e).__name__}: {e}") from None


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
    objects = {cid: component_object(spec) for cid, spec in topology.components.items()
               if not cid.startswith(("$", "__"))}
    plain = [c.id for c in spouts if not isinstance(objects[c.id], SeekableSpout)]
    if plain:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once needs seekable spouts (squall.SeekableSpout: "
            f"position() and seek()); not seekable: {_names(plain)}")
    unaligned = [cid for cid, obj in objects.items()
                 if getattr(type(obj), "follows_checkpoints", None) is False]
    if unaligned:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once cannot undo writes of components that do not "
            f"follow checkpoints (follows_checkpoints = False): {_names(unaligned)}")
    from squall.api.asyncbolt import AsyncBolt

    async_bolts = [cid for cid, obj in objects.items() if isinstance(obj, AsyncBolt)]
    if async_bolts:
        raise InvalidTopologyError(
            f"topology.guarantee exactly_once does not support AsyncBolt (its executes end "
            f"after the checkpoint barrier passed): {_names(async_bolts)}")
