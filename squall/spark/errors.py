"""Errors of the Spark backend: each message says what is wrong and what to do."""

from __future__ import annotations

from squall.api.errors import TopologyStartError


class SparkSetupError(RuntimeError):
    """Spark cannot be used as configured (no Java, unreachable master, no executors)."""


class InsufficientSlotsError(TopologyStartError):
    """The topology asks for more workers than the Spark cluster has task slots."""
