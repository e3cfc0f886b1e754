"""``WindowedBolt``: the class users subclass for windows (Storm's ``BaseWindowedBolt``).

The window's shape is set with chainable ``with_*`` methods and kept as component
configuration under Storm's keys. ``TopologyBuilder.set_bolt`` asks the bolt for
``as_bolt()`` and runs the ``WindowedBoltExecutor`` it returns, which wraps this bolt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.api.components import Component
from squall.api.fields import Fields
from squall.windows import shapes
from squall.windows.executor import WindowedBoltExecutor
from squall.windows.shapes import Count, Duration

if TYPE_CHECKING:
    from squall.api.context import TopologyContext
    from squall.windows.window import TupleWindow

Shape = Count | Duration


class WindowedBolt(Component):
    """A bolt whose ``execute`` receives windows of tuples rather than single tuples.

    Input tuples are acked when they leave every window they belong to; what ``execute``
    emits without explicit anchors is anchored to every tuple of the window.
    """

    def __init__(self) -> None:
        self.window_configuration: dict[str, Any] = {}
        self.timestamp_extractor: Callable[[Any], int] | None = None

    # ---- what users override ---------------------------------------------------------

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Called once per task in its worker, before any window."""

    def execute(self, window: TupleWindow) -> None:
        """Process one window."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute(window)")

    def cleanup(self) -> None:
        """Called on a graceful stop."""

    # ---- shapes ------------------------------------------------------------------------

    def _conf(self) -> dict[str, Any]:
        # subclasses that forget super().__init__() still work
        conf = self.__dict__.get("window_configuration")
        if conf is None:
            conf = self.window_configuration = {}
        return conf

    def with_window(self, length: Shape, sliding: Shape | None = None) -> WindowedBolt:
        """A sliding window of ``length``, sliding by ``sliding`` (None: every tuple)."""
        conf = self._conf()
        for key in (shapes.WINDOW_LENGTH_COUNT, shapes.WINDOW_LENGTH_DURATION_MS,
                    shapes.SLIDING_INTERVAL_COUNT, shapes.SLIDING_INTERVAL_DURATION_MS,
                    shapes.SESSION_GAP_MS, shapes.SESSION_KEY_FIELDS):
            conf.pop(key, None)
        conf[_key("length", length)] = _value("window length", length)
        if sliding is not None:
            conf[_key("sliding", sliding)] = _value("sliding interval", sliding)
        return self

    def with_tumbling_window(self, length: Shape) -> WindowedBolt:
        """A tumbling window: consecutive, non-overlapping windows of ``length``."""
        return self.with_window(length, length)

    def with_session_window(self, gap: Duration, key: Fields | None = None) -> WindowedBolt:
        """JStorm's session window: closes once no tuple of its key arrived for ``gap``."""
        if not isinstance(gap, Duration) or gap.value <= 0:
            raise ValueError(f"session gap must be a positive Duration, got {gap!r}")
        self.with_window(gap)
        conf = self._conf()
        conf.pop(shapes.WINDOW_LENGTH_DURATION_MS, None)
        conf[shapes.SESSION_GAP_MS] = gap.value
        if key is not None:
            conf[shapes.SESSION_KEY_FIELDS] = list(key if isinstance(key, Fields) else Fields(key))
        return self

    # ---- event time --------------------------------------------------------------------

    def with_timestamp_field(self, name: str) -> WindowedBolt:
        """Event time: the tuple's ``name`` field holds its timestamp (ms since the epoch)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"timestamp field must be a field name, got {name!r}")
        self._conf()[shapes.TIMESTAMP_FIELD] = name
        self.timestamp_extractor = None
        return self

    def with_timestamp_extractor(self, fn: Callable[[Any], int]) -> WindowedBolt:
        """Event time: ``fn(tuple)`` returns the tuple's timestamp in ms."""
        if not callable(fn):
            raise ValueError(f"timestamp extractor must be callable, got {fn!r}")
        self._conf().pop(shapes.TIMESTAMP_FIELD, None)
        self.timestamp_extractor = fn
        return self

    def with_lag(self, lag: Duration) -> WindowedBolt:
        """How far out of order tuples may arrive (event time)."""
        self._conf()[shapes.TIMESTAMP_MAX_LAG_MS] = _duration("lag", lag, allow_zero=True)
        return self

    def with_watermark_interval(self, interval: Duration) -> WindowedBolt:
        """How often watermarks are computed (event time; default 1 s)."""
        self._conf()[shapes.WATERMARK_INTERVAL_MS] = _duration("watermark interval", interval)
        return self

    def with_late_tuple_stream(self, stream: str) -> WindowedBolt:
        """Emit tuples older than the last watermark on ``stream`` (field ``late_tuple``)."""
        if not isinstance(stream, str) or not stream:
            raise ValueError(f"late tuple stream must be a stream name, got {stream!r}")
        self._conf()[shapes.LATE_TUPLE_STREAM] = stream
        return self

    # ---- what the executor reads ------------------------------------------------------

    def get_timestamp_extractor(self) -> Callable[[Any], int] | None:
        """The extractor of event time, or None for processing time."""
        fn = self.__dict__.get("timestamp_extractor")
        if fn is not None:
            return fn
        name = self._conf().get(shapes.TIMESTAMP_FIELD)
        return None if name is None else _FieldTimestamp(name)

    def get_window_configuration(self) -> dict[str, Any]:
        """The window's shape under Storm's keys (the executor adds them to the configuration)."""
        return self._conf()

    def get_component_configuration(self) -> dict | None:
        """The user's component configuration (the window's is added by the executor)."""
        return None

    def as_bolt(self) -> Any:
        """The bolt that runs this one (called by ``TopologyBuilder.set_bolt``)."""
        return WindowedBoltExecutor(self)


class _FieldTimestamp:
    """Reads the timestamp from a named field (picklable, unlike a lambda)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, tup: Any) -> int:
        try:
            value = tup[self.name]
        except (KeyError, ValueError, IndexError):
            raise ValueError(f"tuple from {tup.component!r} on stream {tup.stream!r} has no "
                             f"timestamp field {self.name!r} (fields: {list(tup.fields)})") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"timestamp field {self.name!r} must hold integer milliseconds, "
                             f"got {value!r}")
        return value


def _key(which: str, shape: Shape) -> str:
    if which == "length":
        return shapes.WINDOW_LENGTH_COUNT if isinstance(shape, Count) else shapes.WINDOW_LENGTH_DURATION_MS
    return shapes.SLIDING_INTERVAL_COUNT if isinstance(shape, Count) else shapes.SLIDING_INTERVAL_DURATION_MS


def _value(what: str, shape: object) -> int:
    if not isinstance(shape, (Count, Duration)):
        raise ValueError(f"{what} must be a Count or a Duration, got {shape!r}")
    if shape.value <= 0:
        raise ValueError(f"{what} must be positive, got {shape!r}")
    return shape.value


def _duration(what: str, d: object, allow_zero: bool = False) -> int:
    if not isinstance(d, Duration) or (d.value <= 0 and not allow_zero):
        raise ValueError(f"{what} must be a {'non-negative' if allow_zero else 'positive'} "
                         f"Duration, got {d!r}")
    return d.value
