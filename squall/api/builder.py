"""``TopologyBuilder``: wire spouts and bolts with groupings, then validate."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

import cloudpickle

from squall.api.asyncbolt import AsyncBolt
from squall.api.components import (
    BasicBolt,
    Bolt,
    CustomStreamGrouping,
    OutputFieldsDeclarer,
    Spout,
    StatefulBolt,
    StreamDef,
)
from squall.api.config import (
    TOPOLOGY_MAX_TASK_PARALLELISM,
    TOPOLOGY_TASKS,
    check_component_conf,
    component_tasks,
)
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.api.topology import ComponentSpec, Grouping, Input, StormTopology
from squall.api.tuple import DEFAULT_STREAM

RESERVED_PREFIXES = ("__", "$")
# reserved names a component may still declare: ReliableSpout's dead letters
SYSTEM_DECLARABLE_STREAMS = frozenset({"__dead_letter"})
SYSTEM_STREAM = "__system"
_SYSTEM_STREAM_DEF = StreamDef(Fields("event"), False)


def _check_id(cid: object) -> str:
    if not isinstance(cid, str) or not cid:
        raise InvalidTopologyError(f"component id must be a non-empty string, got {cid!r}")
    if cid.startswith(RESERVED_PREFIXES):
        raise InvalidTopologyError(
            f"component id {cid!r} clashes with system components: ids starting with "
            f"'__' or '$' are reserved; rename it"
        )
    return cid


def _check_count(cid: str, what: str, n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidTopologyError(
            f"component {cid!r}: {what} must be a positive integer, got {n!r}; use 1 or more"
        )
    return n


class ComponentDeclarer:
    """Returned by ``set_spout``/``set_bolt``: groupings and resource hints, chainable."""

    def __init__(self, cid: str, kind: str, component: Any, parallelism: int) -> None:
        self.id = cid
        self.kind = kind
        self.component = component
        self.parallelism = parallelism
        self.inputs: list[Input] = []
        self.conf: dict[str, Any] = {}
        self.memory_load_mb: float | None = None
        self.cpu_load_percent: float | None = None

    def _grouping(self, component: str, stream: str, grouping: Grouping) -> ComponentDeclarer:
        self.inputs.append(Input(component, stream, grouping))
        return self

    def shuffle_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        """Spread tuples evenly over the tasks (balanced, reshuffled every cycle)."""
        return self._grouping(component, stream, Grouping("shuffle"))

    def fields_grouping(
        self, component: str, fields: Fields, stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        """Tuples with equal values of ``fields`` go to the same task."""
        if not isinstance(fields, Fields):
            fields = Fields(fields)  # a name, or an iterable of names
        return self._grouping(component, stream, Grouping("fields", fields=fields))

    def partial_key_grouping(
        self, component: str, fields: Fields, stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        """Storm's partial key grouping: the less loaded of each key's two candidate tasks.

        The candidates come from two stable hashes of ``fields``; the load is what this
        emitter has sent to each. A key's tuples are split over at most two tasks, so a
        skewed key spreads its load where fields grouping would pile it on one task; the
        bolt must merge partial results.
        """
        if not isinstance(fields, Fields):
            fields = Fields(fields)  # a name, or an iterable of names
        return self._grouping(component, stream, Grouping("partial_key", fields=fields))

    def all_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        """Every task gets every tuple."""
        return self._grouping(component, stream, Grouping("all"))

    def global_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        """Every tuple goes to the task with the lowest id."""
        return self._grouping(component, stream, Grouping("global"))

    def none_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        """No preference: routed as shuffle."""
        return self._grouping(component, stream, Grouping("none"))

    def direct_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> ComponentDeclarer:
        """The emitter picks the task with ``emit_direct``; the stream must be direct."""
        return self._grouping(component, stream, Grouping("direct"))

    def local_or_shuffle_grouping(
        self, component: str, stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        """Prefer tasks in the emitter's worker; shuffle among them."""
        return self._grouping(component, stream, Grouping("local_or_shuffle"))

    def custom_grouping(
        self, component: str, grouping: CustomStreamGrouping, stream: str = DEFAULT_STREAM
    ) -> ComponentDeclarer:
        """Route with a user ``CustomStreamGrouping``."""
        return self._grouping(component, stream, Grouping("custom", custom=grouping))

    @property
    def num_tasks(self) -> int | None:
        """The tasks set by ``set_num_tasks`` or ``add_configuration("topology.tasks", n)``."""
        return self.conf.get(TOPOLOGY_TASKS)

    def set_num_tasks(self, n: int) -> ComponentDeclarer:
        """Tasks for this component (default: its parallelism), spread over its executors.

        As Storm's, this is the component configuration ``topology.tasks``; with fewer
        tasks than the parallelism, the component gets one executor per task.
        """
        return self.add_configuration(TOPOLOGY_TASKS, n)

    def set_max_task_parallelism(self, n: int | None) -> ComponentDeclarer:
        """Cap this component's tasks (and so its executors): ``topology.max.task.parallelism``."""
        return self.add_configuration(TOPOLOGY_MAX_TASK_PARALLELISM, n)

    def set_memory_load(self, mb: float) -> ComponentDeclarer:
        """Memory hint per task, in MB, for the scheduler."""
        self.memory_load_mb = float(mb)
        return self

    def set_cpu_load(self, percent: float) -> ComponentDeclarer:
        """CPU hint per task, in percent of a core, for the scheduler."""
        self.cpu_load_percent = float(percent)
        return self

    def set_threaded(self, threaded: bool = True) -> ComponentDeclarer:
        """Run each task of this component on a thread of its own (JStorm's model).

        The component configuration ``squall.task.threaded``. For components that wait on
        the outside world (a lookup, an HTTP call): while one task waits, the other tasks
        of its worker carry on. CPU-bound components are faster on the worker's loop.
        """
        self.conf["squall.task.threaded"] = bool(threaded)
        return self

    def add_configuration(self, key: str, value: Any) -> ComponentDeclarer:
        """Configuration for this component only; wins over ``get_component_configuration``."""
        if not isinstance(key, str) or not key:
            raise InvalidTopologyError(
                f"component {self.id!r}: configuration keys are non-empty strings, got {key!r}"
            )
        self.conf[key] = value
        return self

    def add_configurations(self, conf: dict) -> ComponentDeclarer:
        """``add_configuration`` for every item of ``conf``."""
        for key, value in conf.items():
            self.add_configuration(key, value)
        return self


class TopologyBuilder:
    """Builds a topology; ``create_topology`` validates it.

    >>> from squall.api.components import Spout
    >>> b = TopologyBuilder()
    >>> _ = b.set_spout("s", Spout())
    >>> sorted(b.create_topology().components)
    ['s']
    """

    def __init__(self) -> None:
        self._declarers: dict[str, ComponentDeclarer] = {}

    def set_spout(self, cid: str, spout: Spout, parallelism: int = 1) -> ComponentDeclarer:
        """Add a spout with ``parallelism`` executors."""
        return self._add(cid, "spout", spout, parallelism, (Spout,))

    def set_bolt(self, cid: str, bolt: Bolt | BasicBolt, parallelism: int = 1) -> ComponentDeclarer:
        """Add a bolt with ``parallelism`` executors.

        A component with an ``as_bolt()`` method (a windowed bolt) runs as the bolt that
        method returns, which wraps it (as Storm's builder wraps an ``IWindowedBolt``).
        """
        as_bolt = getattr(bolt, "as_bolt", None)
        if callable(as_bolt) and not isinstance(bolt, (Bolt, BasicBolt)):
            bolt = as_bolt()
        return self._add(cid, "bolt", bolt, parallelism, (Bolt, BasicBolt))

    def _add(
        self, cid: str, kind: str, obj: Any, parallelism: int, types: tuple[type, ...]
    ) -> ComponentDeclarer:
        _check_id(cid)
        if cid in self._declarers:
            raise InvalidTopologyError(
                f"component id {cid!r} is used twice; give each spout and bolt its own id"
            )
        if not isinstance(obj, types):
            names = " or ".join(t.__name__ for t in types)
            raise InvalidTopologyError(
                f"component {cid!r}: set_{kind} needs an instance of {names}, "
                f"got {type(obj).__name__}"
            )
        declarer = ComponentDeclarer(cid, kind, obj, parallelism)
        self._declarers[cid] = declarer
        return declarer

    def create_topology(self) -> StormTopology:
        """Validate and freeze the topology; raises ``InvalidTopologyError``."""
        if not any(d.kind == "spout" for d in self._declarers.values()):
            raise InvalidTopologyError("the topology has no spout; add one with set_spout")
        streams = {cid: _declared_streams(d) for cid, d in self._declarers.items()}
        components = {}
        for cid, d in sorted(self._declarers.items()):
            hint = _check_count(cid, "parallelism", d.parallelism)
            # Storm's merge: the component's own configuration, then the builder's on top
            conf = {**_component_conf(d), **d.conf}
            check_component_conf(cid, conf)
            num_tasks, parallelism = component_tasks(hint, conf)
            _check_inputs(d, streams)
            components[cid] = ComponentSpec(
                id=cid,
                kind=d.kind,  # type: ignore[arg-type]
                class_name=f"{type(d.component).__module__}.{type(d.component).__qualname__}",
                payload=_pickle(f"component {cid!r}", d.component),
                parallelism=parallelism,
                num_tasks=num_tasks,
                inputs=tuple(d.inputs),
                streams=streams[cid],
                conf=conf,
                memory_load_mb=d.memory_load_mb,
                cpu_load_percent=d.cpu_load_percent,
                stateful=isinstance(d.component, StatefulBolt),
                chainable=_chainable(d.component),
                asynchronous=_asynchronous(d.component),
            )
        return StormTopology(components)


def _asynchronous(component: Any) -> bool:
    """True for an ``AsyncBolt``: its tasks run on an event loop."""
    return isinstance(component, AsyncBolt)


def _chainable(component: Any) -> bool:
    """May run fused with its upstream: a ``BasicBolt``, or a bolt whose class says ``chainable = True``.

    ``chainable = False`` opts a ``BasicBolt`` out; stateful and async bolts never chain.
    """
    if isinstance(component, StatefulBolt) or _asynchronous(component):
        return False
    own = getattr(type(component), "chainable", None)
    if own is not None:
        return own is True
    return isinstance(component, BasicBolt)


def _declared_streams(d: ComponentDeclarer) -> dict:
    declarer = OutputFieldsDeclarer()
    try:
        d.component.declare_output_fields(declarer)
    except Exception as e:  # noqa: BLE001 - user code; report it with the component's name
        raise InvalidTopologyError(
            f"component {d.id!r}: declare_output_fields raised {type(e).__name__}: {e}"
        ) from e
    for stream in declarer.streams:
        if not isinstance(stream, str) or not stream:
            raise InvalidTopologyError(
                f"component {d.id!r} declares stream {stream!r}: stream names must be non-empty strings"
            )
        if stream.startswith(RESERVED_PREFIXES) and stream not in SYSTEM_DECLARABLE_STREAMS:
            raise InvalidTopologyError(
                f"component {d.id!r} declares stream {stream!r}: stream names starting with "
                f"'__' or '$' are reserved; rename it"
            )
    return declarer.streams


def _component_conf(d: ComponentDeclarer) -> dict:
    try:
        conf = d.component.get_component_configuration()
    except Exception as e:  # noqa: BLE001
        raise InvalidTopologyError(
            f"component {d.id!r}: get_component_configuration raised {type(e).__name__}: {e}"
        ) from e
    if conf is not None and not isinstance(conf, dict):
        raise InvalidTopologyError(
            f"component {d.id!r}: get_component_configuration must return a dict or None, "
            f"got {type(conf).__name__}"
        )
    return conf or {}


def _check_inputs(d: ComponentDeclarer, streams: dict[str, dict]) -> None:
    if d.kind == "spout":
        if d.inputs:
            raise InvalidTopologyError(
                f"spout {d.id!r} subscribes to {d.inputs[0].component!r}: spouts take no "
                f"inputs; make it a bolt, or remove the grouping"
            )
        return
    if not d.inputs:
        raise InvalidTopologyError(
            f"bolt {d.id!r} has no inputs; subscribe it with a grouping such as "
            f"shuffle_grouping('<component>')"
        )
    seen = set()
    for inp in d.inputs:
        where = f"bolt {d.id!r}"
        if inp.component not in streams:
            known = ", ".join(sorted(streams))
            raise InvalidTopologyError(
                f"{where} subscribes to unknown component {inp.component!r}; known: {known}"
            )
        if (inp.component, inp.stream) in seen:
            raise InvalidTopologyError(
                f"{where} subscribes twice to stream {inp.stream!r} of {inp.component!r}; "
                f"keep one grouping"
            )
        seen.add((inp.component, inp.stream))
        # Storm's addSystemStreams: every component has __system (fields "event"), so a bolt
        # may subscribe to it; user components emit nothing on it
        declared = {**streams[inp.component], SYSTEM_STREAM: _SYSTEM_STREAM_DEF}
        if inp.stream not in declared:
            known = ", ".join(sorted(streams[inp.component])) or "none"
            raise InvalidTopologyError(
                f"{where} subscribes to stream {inp.stream!r} of {inp.component!r}, which "
                f"does not declare it (declared: {known}); declare it in "
                f"declare_output_fields or fix the stream name"
            )
        _check_grouping(where, inp, declared[inp.stream])


def _check_grouping(where: str, inp: Input, stream_def: Any) -> None:
    g = inp.grouping
    origin = f"stream {inp.stream!r} of {inp.component!r}"
    if g.kind == "direct" and not stream_def.direct:
        raise InvalidTopologyError(
            f"{where} uses direct_grouping on {origin}, which is not direct; declare it "
            f"with declarer.declare(..., direct=True)"
        )
    if g.kind != "direct" and stream_def.direct:
        raise InvalidTopologyError(
            f"{where} uses {g.kind} grouping on direct {origin}; direct streams need "
            f"direct_grouping"
        )
    if g.kind in ("fields", "partial_key"):
        assert g.fields is not None
        if len(g.fields) == 0:
            raise InvalidTopologyError(f"{where}: {g.kind}_grouping on {origin} names no field")
        for name in g.fields:
            if name not in stream_def.fields:
                raise InvalidTopologyError(
                    f"{where}: {g.kind}_grouping on {origin} uses unknown field {name!r}; "
                    f"the stream has {stream_def.fields.to_list()}"
                )
    if g.kind == "custom":
        if not callable(getattr(g.custom, "choose_tasks", None)):
            raise InvalidTopologyError(
                f"{where}: custom_grouping on {origin} needs a CustomStreamGrouping, got "
                f"{type(g.custom).__name__}"
            )
        _pickle(f"{where}: the custom grouping on {origin}", g.custom)


def _pickle(what: str, obj: Any) -> bytes:
    try:
        return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - any pickling failure means the same to the user
        raise InvalidTopologyError(
            f"{what} ({type(obj).__name__}) cannot be pickled: "
            f"{type(e).__name__}: {e}; create sockets, locks and clients in open/prepare, "
            f"not __init__"
        ) from e


def with_conf(spec: ComponentSpec, **changes: Any) -> ComponentSpec:
    """A copy of ``spec`` with fields changed (used by rebalance)."""
    return replace(spec, **changes)
