"""Distributed RPC: a function call answered by a topology (Storm's DRPC).

``LinearDRPCTopologyBuilder`` builds the topology from a chain of bolts (``BatchBolt``s
and coordinated bolts learn when they have seen all of a request); ``LocalDRPC`` serves
it in-process for ``LocalCluster``; ``squall drpc`` runs the DRPC server and
``DRPCClient`` calls it. See docs/drpc.md.
"""

from __future__ import annotations

from squall.drpc.bolts import JoinResult, PrepareRequest, ReturnResults
from squall.drpc.builder import LinearDRPCInputDeclarer, LinearDRPCTopologyBuilder
from squall.drpc.client import DRPCClient, DRPCInvocationsClient
from squall.drpc.coordinated import (
    BatchBolt,
    BatchOutputCollector,
    CoordinatedBolt,
    FinishedCallback,
    IdStreamSpec,
    SourceArgs,
)
from squall.drpc.core import DRPC
from squall.drpc.errors import DRPCAuthorizationError, DRPCExecutionError
from squall.drpc.local import LocalDRPC
from squall.drpc.server import DRPCServer
from squall.drpc.spout import DRPCSpout

__all__ = [
    "DRPC", "BatchBolt", "BatchOutputCollector", "CoordinatedBolt", "DRPCAuthorizationError",
    "DRPCClient", "DRPCExecutionError", "DRPCInvocationsClient", "DRPCServer", "DRPCSpout",
    "FinishedCallback", "IdStreamSpec", "JoinResult", "LinearDRPCInputDeclarer",
    "LinearDRPCTopologyBuilder", "LocalDRPC", "PrepareRequest", "ReturnResults", "SourceArgs",
]
