"""Errors of the Spark backend: each message says what is wrong and what to do."""

from __future__ import annotations

from squall.api.errors import TopologyStartError


class SparkSetupError(RuntimeError):
    """Spark cannot be used as configured (no Java, unreachable master, no executors)."""


class InsufficientSlotsError(TopologyStartError):
    """The topology asks for more workers than the Spark cluster has task slots."""


def spark_job_error(e: BaseException) -> str:
    """The useful part of a Spark job failure (Py4J errors carry pages of JVM trace)."""
    text = str(e)
    for marker in ("Python worker exited unexpectedly", "RuntimeError: squall", "TopologyStartError",
                   "ModuleNotFoundError", "Task killed", "cancelled"):
        at = text.find(marker)
        if at >= 0:
            return text[at:].split(". Consider")[0].splitlines()[0][:300]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(e).__name__)[:300]
