"""The built topology: plain frozen data that the runtimes read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from squall.api.fields import Fields
from squall.api.grouping import CustomStreamGrouping
from squall.api.streams import StreamDef

GroupingKind = Literal[
    "shuffle", "fields", "all", "global", "none", "direct", "local_or_shuffle", "partial_key",
    "custom",
]
GROUPING_KINDS: tuple[str, ...] = (
    "shuffle", "fields", "all", "global", "none", "direct", "local_or_shuffle", "partial_key",
    "custom",
)


@dataclass(frozen=True)
class Grouping:
    """How one subscribed stream is split among the subscriber's tasks."""

    kind: GroupingKind
    fields: Fields | None = None
    custom: CustomStreamGrouping | None = None


@dataclass(frozen=True)
class Input:
    """A subscription: ``component``'s ``stream`` routed by ``grouping``."""

    component: str
    stream: str
    grouping: Grouping


@dataclass(frozen=True)
class ComponentSpec:
    """One spout or bolt of a topology, with its pickled instance."""

    id: str
    kind: Literal["spout", "bolt"]
    class_name: str
    payload: bytes  # cloudpickle of the instance; unpickled once per task in its worker
    parallelism: int
    num_tasks: int
    inputs: tuple[Input, ...]
    streams: dict[str, StreamDef]
    conf: dict[str, Any] = field(default_factory=dict)
    memory_load_mb: float | None = None
    cpu_load_percent: float | None = None
    stateful: bool = False
    # may run fused with its upstream (squall.runtime.chain): a BasicBolt, or ``chainable = True``
    chainable: bool = False
    asynchronous: bool = False  # an AsyncBolt: runs on an event loop, never in a chain


@dataclass(frozen=True)
class StormTopology:
    """A validated topology: its components by id."""

    components: dict[str, ComponentSpec]

    @property
    def stateful(self) -> bool:
        """True when some bolt keeps checkpointed state."""
        return any(c.stateful for c in self.components.values())

    @property
    def spouts(self) -> list[ComponentSpec]:
        """The spouts, sorted by id."""
        return [c for _, c in sorted(self.components.items()) if c.kind == "spout"]

    @property
    def bolts(self) -> list[ComponentSpec]:
        """The bolts, sorted by id."""
        return [c for _, c in sorted(self.components.items()) if c.kind == "bolt"]

    def subscribers(self, component: str, stream: str) -> list[tuple[str, Grouping]]:
        """(subscriber id, grouping) for every component reading ``component``'s ``stream``."""
        out = []
        for cid in sorted(self.components):
            for inp in self.components[cid].inputs:
                if inp.component == component and inp.stream == stream:
                    out.append((cid, inp.grouping))
        return out
