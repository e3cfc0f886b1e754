"""Window shapes (``Count``, ``Duration``) and the configuration keys that carry them.

A windowed bolt writes its shape into its component configuration under Storm's keys, so
the shape travels with the topology as plain data: the executor reads it in ``prepare``
and submission checks it against ``topology.message.timeout.secs``.
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOW_LENGTH_COUNT = "topology.bolts.window.length.count"
WINDOW_LENGTH_DURATION_MS = "topology.bolts.window.length.duration.ms"
SLIDING_INTERVAL_COUNT = "topology.bolts.window.sliding.interval.count"
SLIDING_INTERVAL_DURATION_MS = "topology.bolts.window.sliding.interval.duration.ms"
LATE_TUPLE_STREAM = "topology.bolts.late.tuple.stream"
TIMESTAMP_MAX_LAG_MS = "topology.bolts.tuple.timestamp.max.lag.ms"
WATERMARK_INTERVAL_MS = "topology.bolts.watermark.event.interval.ms"
TIMESTAMP_FIELD = "topology.bolts.tuple.timestamp.field.name"
MESSAGE_ID_FIELD = "topology.bolts.message.id.field.name"
SESSION_GAP_MS = "squall.bolts.window.session.gap.ms"
SESSION_KEY_FIELDS = "squall.bolts.window.session.key.fields"
PERSISTENT = "squall.bolts.window.persistent"

LATE_TUPLE_FIELD = "late_tuple"
DEFAULT_WATERMARK_INTERVAL_MS = 1000
DEFAULT_MAX_LAG_MS = 0


def _positive_int(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Count:
    """A window length or sliding interval in tuples: ``Count(10)``."""

    value: int

    def __post_init__(self) -> None:
        _positive_int("Count", self.value)

    @staticmethod
    def of(n: int) -> Count:
        """Storm's ``Count.of(n)``."""
        return Count(n)


@dataclass(frozen=True)
class Duration:
    """A window length, sliding interval, gap or lag in milliseconds.

    >>> Duration.seconds(2).value
    2000
    """

    value: int

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 0:
            raise ValueError(f"Duration must be a non-negative integer of milliseconds, got {self.value!r}")

    @staticmethod
    def of(milliseconds: int) -> Duration:
        """Storm's ``Duration.of(ms)``."""
        return Duration(int(milliseconds))

    @staticmethod
    def milliseconds(n: int) -> Duration:
        """``n`` milliseconds."""
        return Duration(int(n))

    @staticmethod
    def seconds(n: float) -> Duration:
        """``n`` seconds."""
        return Duration(int(round(n * 1000)))

    @staticmethod
    def minutes(n: float) -> Duration:
        """``n`` minutes."""
        return Duration(int(round(n * 60_000)))

    @staticmethod
    def hours(n: float) -> Duration:
        """``n`` hours."""
        return Duration(int(round(n * 3_600_000)))

    @staticmethod
    def days(n: float) -> Duration:
        """``n`` days."""
        return Duration(int(round(n * 86_400_000)))
