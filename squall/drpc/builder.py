"""``LinearDRPCTopologyBuilder``: a chain of bolts answering one DRPC function (Storm's).

The topology it builds: ``spout`` (``DRPCSpout``) -> ``prepare-request`` -> ``bolt0`` ...
``boltN-1`` (the user's bolts, each wrapped in a ``CoordinatedBolt``) -> ``boltN``
(``JoinResult``) -> ``boltN+1`` (``ReturnResults``). The first bolt gets ``[id, args]``;
every tuple's first field is the request id; the last bolt declares one stream of two
fields, ``[id, result]``, whose ``result`` is what the caller gets (as a string).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from squall.api.builder import ComponentDeclarer, TopologyBuilder
from squall.api.components import BasicBolt, Bolt, CustomStreamGrouping, OutputFieldsDeclarer
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.api.topology import StormTopology
from squall.api.tuple import DEFAULT_STREAM
from squall.drpc.bolts import ARGS_STREAM, ID_STREAM, RETURN_STREAM, JoinResult, PrepareRequest, ReturnResults
from squall.drpc.coordinated import (
    COORD_STREAM,
    BatchBolt,
    CoordinatedBolt,
    FinishedCallback,
    IdStreamSpec,
    SourceArgs,
    as_rich_bolt,
)
from squall.drpc.local import LocalDRPC
from squall.drpc.spout import DRPCSpout

SPOUT_ID = "spout"
PREPARE_ID = "prepare-request"

_Declaration = Callable[[str, ComponentDeclarer], Any]


def bolt_id(index: int) -> str:
    """The component id of the bolt at ``index`` (Storm's ``bolt0``, ``bolt1`` ...)."""
    return f"bolt{index}"


class LinearDRPCInputDeclarer:
    """How one bolt reads the bolt before it (groupings without a component), chainable."""

    def __init__(self, bolt: Bolt, parallelism: int) -> None:
        self.bolt = bolt
        self.parallelism = parallelism
        self.declarations: list[_Declaration] = []
        self.conf: dict[str, Any] = {}
        self.num_tasks: int | None = None

    def _add(self, declaration: _Declaration) -> LinearDRPCInputDeclarer:
        self.declarations.append(declaration)
        return self

    def shuffle_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Shuffle from the previous bolt's ``stream``."""
        return self._add(lambda prev, d: d.shuffle_grouping(prev, stream))

    def fields_grouping(self, fields: Fields, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Group by ``fields`` of the previous bolt's ``stream``."""
        return self._add(lambda prev, d: d.fields_grouping(prev, fields, stream))

    def global_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Everything to the lowest task."""
        return self._add(lambda prev, d: d.global_grouping(prev, stream))

    def none_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """No preference."""
        return self._add(lambda prev, d: d.none_grouping(prev, stream))

    def all_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Every task gets every tuple."""
        return self._add(lambda prev, d: d.all_grouping(prev, stream))

    def direct_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """The previous bolt picks the task."""
        return self._add(lambda prev, d: d.direct_grouping(prev, stream))

    def local_or_shuffle_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Prefer tasks in the same worker."""
        return self._add(lambda prev, d: d.local_or_shuffle_grouping(prev, stream))

    def custom_grouping(self, grouping: CustomStreamGrouping,
                        stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Route with a ``CustomStreamGrouping``."""
        return self._add(lambda prev, d: d.custom_grouping(prev, grouping, stream))

    def add_configuration(self, key: str, value: Any) -> LinearDRPCInputDeclarer:
        """Configuration for this bolt only."""
        self.conf[key] = value
        return self

    def set_num_tasks(self, n: int) -> LinearDRPCInputDeclarer:
        """Tasks for this bolt."""
        self.num_tasks = n
        return self


class LinearDRPCTopologyBuilder:
    """Builds the topology that answers DRPC calls of ``function`` through a chain of bolts."""

    def __init__(self, function: str) -> None:
        if not isinstance(function, str) or not function:
            raise InvalidTopologyError(f"a DRPC function name must be a non-empty string, got {function!r}")
        self.function = function
        self._components: list[LinearDRPCInputDeclarer] = []

    def add_bolt(self, bolt: Bolt | BasicBolt | BatchBolt, parallelism: int = 1) -> LinearDRPCInputDeclarer:
        """Append ``bolt`` to the chain; returns its input declarer."""
        try:
            rich = as_rich_bolt(bolt)
        except TypeError as e:
            raise InvalidTopologyError(f"DRPC function {self.function!r}, bolt {len(self._components)}: "
                                       f"{e}") from None
        declarer = LinearDRPCInputDeclarer(rich, parallelism)
        self._components.append(declarer)
        return declarer

    def create_local_topology(self, drpc: LocalDRPC) -> StormTopology:
        """The topology, reading requests from ``drpc`` (a ``LocalDRPC`` of this process)."""
        return self._create(DRPCSpout(self.function, drpc))

    def create_remote_topology(self) -> StormTopology:
        """The topology, reading requests from the servers of ``drpc.servers``."""
        return self._create(DRPCSpout(self.function))

    def _create(self, spout: DRPCSpout) -> StormTopology:
        components = self._components
        if not components:
            raise InvalidTopologyError(f"DRPC function {self.function!r} has no bolts; add one with add_bolt")
        builder = TopologyBuilder()
        builder.set_spout(SPOUT_ID, spout)
        builder.set_bolt(PREPARE_ID, PrepareRequest()).none_grouping(SPOUT_ID)
        last = len(components) - 1
        for i, comp in enumerate(components):
            source: dict[str, SourceArgs] = {}
            if i == 1:
                source[bolt_id(0)] = SourceArgs.single()
            elif i >= 2:
                source[bolt_id(i - 1)] = SourceArgs.all()
            id_spec = None
            if i == last and isinstance(comp.bolt, FinishedCallback):
                id_spec = IdStreamSpec(PREPARE_ID, ID_STREAM)
            d = builder.set_bolt(bolt_id(i), CoordinatedBolt(comp.bolt, source, id_spec), comp.parallelism)
            for key, value in comp.conf.items():
                d.add_configuration(key, value)
            if comp.num_tasks is not None:
                d.set_num_tasks(comp.num_tasks)
            if id_spec is not None:
                d.fields_grouping(PREPARE_ID, Fields("request"), ID_STREAM)
            if i == 0 and not comp.declarations:
                d.none_grouping(PREPARE_ID, ARGS_STREAM)
            else:
                prev = PREPARE_ID if i == 0 else bolt_id(i - 1)
                for declare in comp.declarations:
                    declare(prev, d)
            if i > 0:
                d.direct_grouping(bolt_id(i - 1), COORD_STREAM)
        stream, fields = self._result_stream(components[last].bolt)
        builder.set_bolt(bolt_id(last + 1), JoinResult(PREPARE_ID)) \
            .fields_grouping(bolt_id(last), Fields(fields[0]), stream) \
            .fields_grouping(PREPARE_ID, Fields("request"), RETURN_STREAM)
        builder.set_bolt(bolt_id(last + 2), ReturnResults()).none_grouping(bolt_id(last + 1))
        return builder.create_topology()

    def _result_stream(self, bolt: Bolt) -> tuple[str, list[str]]:
        declarer = OutputFieldsDeclarer()
        bolt.declare_output_fields(declarer)
        if len(declarer.streams) != 1:
            raise InvalidTopologyError(
                f"DRPC function {self.function!r}: the last bolt must declare exactly one stream, "
                f"it declares {sorted(declarer.streams) or 'none'}")
        ((stream, sdef),) = declarer.streams.items()
        if len(sdef.fields) != 2:
            raise InvalidTopologyError(
                f"DRPC function {self.function!r}: the last bolt's stream {stream!r} must have exactly "
                f"two fields, the request id and the result; it has {list(sdef.fields)}")
        return stream, list(sdef.fields)
