"""What users write topologies against (see API.md)."""

from squall.api.builder import ComponentDeclarer, TopologyBuilder
from squall.api.components import (
    BasicBolt,
    Bolt,
    CustomStreamGrouping,
    GlobalStreamId,
    OutputFieldsDeclarer,
    Spout,
    StatefulBolt,
)
from squall.api.config import Config
from squall.api.context import TopologyContext, WorkerTopologyContext
from squall.api.errors import (
    AlreadyAliveError,
    FailedException,
    InvalidTopologyError,
    NotAliveError,
    ReportedFailedException,
    TopologyStartError,
)
from squall.api.fields import Fields
from squall.api.topology import StormTopology
from squall.api.tuple import Tuple

__all__ = [
    "AlreadyAliveError", "BasicBolt", "Bolt", "ComponentDeclarer", "Config",
    "CustomStreamGrouping", "FailedException", "Fields", "GlobalStreamId", "InvalidTopologyError",
    "NotAliveError", "OutputFieldsDeclarer", "ReportedFailedException", "Spout",
    "StatefulBolt", "StormTopology", "TopologyBuilder", "TopologyContext", "TopologyStartError", "Tuple",
    "WorkerTopologyContext",
]
