"""A checkpoint spout's context for tests that open it without a cluster."""

from __future__ import annotations

from types import SimpleNamespace

from squall.api.metrics import MetricRegistry
from squall.runtime import clock


def spout_context(topology_name: str) -> SimpleNamespace:
    """The parts of a TopologyContext the checkpoint spout uses: its name and its metrics."""
    registry = MetricRegistry("$checkpointspout", 1, clock.monotonic)
    return SimpleNamespace(topology_name=topology_name, metric_registry=registry,
                           register_timer=registry.timer, register_counter=registry.counter,
                           register_gauge=registry.gauge)
