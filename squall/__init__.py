"""squall: JStorm's real-time computation model in Python, on Apache Spark.

Importing ``squall`` is cheap: names load on first use, and pyspark is imported only by
``squall.spark``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# before anything imports the hot path: a stale compiled build must never load
from squall import _speedups  # noqa: E402
from squall._version import __version__

_speedups.install()

_EXPORTS = {
    "Spout": "squall.api.components",
    "SeekableSpout": "squall.api.components",
    "Bolt": "squall.api.components",
    "BasicBolt": "squall.api.components",
    "StatefulBolt": "squall.api.components",
    "CustomStreamGrouping": "squall.api.components",
    "GlobalStreamId": "squall.api.components",
    "OutputFieldsDeclarer": "squall.api.components",
    "AsyncBolt": "squall.api.asyncbolt",
    "TopologyBuilder": "squall.api.builder",
    "Fields": "squall.api.fields",
    "Tuple": "squall.api.tuple",
    "Config": "squall.api.config",
    "TopologyContext": "squall.api.context",
    "BaseTaskHook": "squall.api.hooks",
    "FailedException": "squall.api.errors",
    "ReportedFailedException": "squall.api.errors",
    "InvalidTopologyError": "squall.api.errors",
    "TopologyStartError": "squall.api.errors",
    "NotAliveError": "squall.api.errors",
    "AlreadyAliveError": "squall.api.errors",
    "ReliableSpout": "squall.connectors.reliable",
    "LocalCluster": "squall.local.cluster",
    "PartialKeyGrouping": "squall.runtime.groupings",
    "submit_topology": "squall.client.remote",
    "WindowedBolt": "squall.windows",
    "StatefulWindowedBolt": "squall.windows",
    "TupleWindow": "squall.windows",
    "Count": "squall.windows",
    "Duration": "squall.windows",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from squall.api.asyncbolt import AsyncBolt
    from squall.api.builder import TopologyBuilder
    from squall.api.components import (
        BasicBolt,
        Bolt,
        CustomStreamGrouping,
        GlobalStreamId,
        OutputFieldsDeclarer,
        SeekableSpout,
        Spout,
        StatefulBolt,
    )
    from squall.api.config import Config
    from squall.api.context import TopologyContext
    from squall.api.errors import (
        AlreadyAliveError,
        FailedException,
        InvalidTopologyError,
        NotAliveError,
        ReportedFailedException,
        TopologyStartError,
    )
    from squall.api.fields import Fields
    from squall.api.hooks import BaseTaskHook
    from squall.api.tuple import Tuple
    from squall.client.remote import submit_topology
    from squall.connectors.reliable import ReliableSpout
    from squall.local.cluster import LocalCluster
    from squall.runtime.groupings import PartialKeyGrouping
    from squall.windows import Count, Duration, StatefulWindowedBolt, TupleWindow, WindowedBolt


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'squall' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
