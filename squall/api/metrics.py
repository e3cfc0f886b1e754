"""User metrics (Storm's metrics v2, snake_case): counters, gauges, histograms, meters, timers.

A task registers them through its ``TopologyContext`` (``register_counter`` and friends,
usually in ``open``/``prepare``) and updates them from its own thread. Whoever reads the
topology's figures (``get_topology_info``, a Spark worker's heartbeat) calls ``raw()`` from
another thread: updates are plain attribute writes and list appends, which a reader may see
a moment late but never torn. Nothing here is called per tuple unless user code calls it.

Histograms, timers and meters keep what happened in the current and the previous metrics
window (``squall.metrics.window.secs``; the worker rolls every task's windows): their
min/max/mean/percentiles and rates cover between one and two windows of recent samples,
while counts are totals since the task started.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

# Samples kept per histogram and window (Dropwizard's default reservoir size): min, max, mean
# and counts stay exact, percentiles come from a uniform sample of the window beyond this.
RESERVOIR_SIZE = 1028


class Counter:
    """A count that only the task changes: ``inc(n=1)``, ``dec(n=1)``, ``get_count()``."""

    kind = "counter"
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        """Add ``n``."""
        self.count += n

    def dec(self, n: int = 1) -> None:
        """Subtract ``n``."""
        self.count -= n

    def get_count(self) -> int:
        """The current count."""
        return self.count

    def raw(self, now: float) -> dict:
        """Plain data for the topology's figures."""
        return {"type": "counter", "count": self.count}

    def roll(self, now: float) -> None:
        """Counters have no window."""


class Gauge:
    """A value read when the figures are read: ``fn()`` is called then, from the reading thread."""

    kind = "gauge"
    __slots__ = ("fn",)

    def __init__(self, fn: Any) -> None:
        if not callable(fn):  # also Storm's shape: an object with get_value()
            fn = getattr(fn, "get_value", None)
        if not callable(fn):
            raise TypeError(f"a gauge needs a function returning its value (or an object with "
                            f"get_value()), got {type(fn).__name__}")
        self.fn = fn

    def get_value(self) -> Any:
        """The gauge's value now."""
        return self.fn()

    def raw(self, now: float) -> dict:
        """The value (a number, or any plain value); an error's message if ``fn`` raised."""
        try:
            return {"type": "gauge", "value": _plain(self.fn())}
        except Exception as e:  # noqa: BLE001 - user code: show the error, keep the others
            return {"type": "gauge", "value": None, "error": f"{type(e).__name__}: {e}"}

    def roll(self, now: float) -> None:
        """Gauges have no window."""


def _plain(value: Any) -> Any:
    """``value`` if heartbeats can carry it as is, else its ``repr``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


class _Window:
    """What a histogram saw in one metrics window: exact count/sum/min/max, sampled values."""

    __slots__ = ("n", "total", "low", "high", "samples")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.low = 0.0
        self.high = 0.0
        self.samples: list[float] = []

    def add(self, value: float) -> None:
        n = self.n = self.n + 1
        self.total += value
        if n == 1:
            self.low = self.high = value
        elif value < self.low:
            self.low = value
        elif value > self.high:
            self.high = value
        samples = self.samples
        if len(samples) < RESERVOIR_SIZE:
            samples.append(value)
        else:  # Vitter's algorithm R: every value of the window kept with equal chance
            k = random.randrange(n)
            if k < RESERVOIR_SIZE:
                samples[k] = value

    def raw(self) -> dict:
        return {"n": self.n, "sum": self.total, "min": self.low, "max": self.high,
                "samples": list(self.samples)}


class Histogram:
    """The distribution of values given to ``update(value)``."""

    kind = "histogram"
    __slots__ = ("count", "_current", "_windows")

    def __init__(self) -> None:
        self.count = 0
        self._current = _Window()
        # (previous, current), replaced in one assignment so a reader never sees a window twice
        self._windows = (_Window(), self._current)

    def update(self, value: float) -> None:
        """Record one value."""
        self.count += 1
        self._current.add(float(value))

    def get_count(self) -> int:
        """Values recorded since the task started."""
        return self.count

    def raw(self, now: float) -> dict:
        """Total count and both windows' figures and samples."""
        previous, current = self._windows
        return {"type": self.kind, "count": self.count,
                "windows": [previous.raw(), current.raw()]}

    def roll(self, now: float) -> None:
        """Close the current window; the previous one is forgotten."""
        current = _Window()
        self._windows = (self._current, current)
        self._current = current


class Meter:
    """Events marked with ``mark(n=1)``: a count and a rate per second."""

    kind = "meter"
    # ``mark`` only adds to ``count``; windows remember the count at their start, so a roll
    # on the worker's loop thread never races a mark on a task thread of its own
    __slots__ = ("count", "_clock", "_started", "_bases")

    def __init__(self, clock: Callable[[], float]) -> None:
        self.count = 0
        self._clock = clock
        self._started = now = clock()
        self._bases = ((now, 0), (now, 0))  # (start, count then) of the previous, current window

    def mark(self, n: int = 1) -> None:
        """``n`` events happened."""
        self.count += n

    def get_count(self) -> int:
        """Events marked since the task started."""
        return self.count

    def raw(self, now: float) -> dict:
        """Count, recent rate (current + previous window) and mean rate since the start."""
        return {"type": "meter", **self._rates(now)}

    def _rates(self, now: float) -> dict:
        count = self.count
        (since, base), _ = self._bases
        recent = now - since
        lifetime = now - self._started
        return {
            "count": count,
            "rate": (count - base) / recent if recent > 0 else 0.0,
            "mean_rate": count / lifetime if lifetime > 0 else 0.0,
        }

    def roll(self, now: float) -> None:
        """Close the current window."""
        self._bases = (self._bases[1], (now, self.count))


class Timer:
    """Durations, in milliseconds: ``with timer.time(): ...`` or ``update(ms)``; also a meter."""

    kind = "timer"
    __slots__ = ("_clock", "_histogram", "_meter")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._histogram = Histogram()
        self._meter = Meter(clock)

    def time(self) -> TimerContext:
        """Start timing: ``with timer.time(): ...``, or ``ctx = timer.time()`` ... ``ctx.stop()``.

        Durations are read on the runtime's clock, so simulated time drives them in tests.
        """
        return TimerContext(self)

    def update(self, ms: float) -> None:
        """Record one duration of ``ms`` milliseconds."""
        self._histogram.update(ms)
        self._meter.mark()

    def get_count(self) -> int:
        """Durations recorded since the task started."""
        return self._histogram.count

    @property
    def count(self) -> int:
        """Durations recorded since the task started."""
        return self._histogram.count

    def raw(self, now: float) -> dict:
        """The histogram's figures (ms) and the meter's rates."""
        raw = self._histogram.raw(now)
        rates = self._meter._rates(now)
        return {**raw, "type": "timer", "rate": rates["rate"], "mean_rate": rates["mean_rate"]}

    def roll(self, now: float) -> None:
        """Close the current window."""
        self._histogram.roll(now)
        self._meter.roll(now)


class TimerContext:
    """One timing of a ``Timer`` (Dropwizard's ``Timer.Context``): ``stop()`` records it once."""

    __slots__ = ("_timer", "_start", "_stopped")

    def __init__(self, timer: Timer) -> None:
        self._timer = timer
        self._start = timer._clock()
        self._stopped = False

    def stop(self) -> float:
        """Record the time since ``time()`` (once); returns it in milliseconds."""
        ms = (self._timer._clock() - self._start) * 1000.0
        if not self._stopped:
            self._stopped = True
            self._timer.update(ms)
        return ms

    def __enter__(self) -> TimerContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


Metric = Counter | Gauge | Histogram | Meter | Timer


class MetricRegistry:
    """One task's metrics by name (Storm's per-task metric registry).

    ``clock`` is the runtime's monotonic clock in seconds (simulated time in tests).
    """

    def __init__(self, component: str, task: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.component = component
        self.task = task
        self.clock = clock
        self.metrics: dict[str, Metric] = {}

    def _register(self, name: str, metric: Metric) -> Any:
        if not isinstance(name, str) or not name:
            raise ValueError(f"component {self.component!r} task {self.task}: a metric name must be "
                             f"a non-empty string, got {name!r}")
        if name in self.metrics:
            # Storm (Dropwizard): "A metric named ... already exists"
            raise ValueError(f"component {self.component!r} task {self.task}: a metric named "
                             f"{name!r} is already registered ({self.metrics[name].kind})")
        self.metrics[name] = metric
        return metric

    def counter(self, name: str) -> Counter:
        """A new counter ``name``."""
        return self._register(name, Counter())  # type: ignore[no-any-return]

    def gauge(self, name: str, fn: Any) -> Gauge:
        """A new gauge ``name`` reading ``fn()``."""
        return self._register(name, Gauge(fn))  # type: ignore[no-any-return]

    def histogram(self, name: str) -> Histogram:
        """A new histogram ``name``."""
        return self._register(name, Histogram())  # type: ignore[no-any-return]

    def meter(self, name: str) -> Meter:
        """A new meter ``name``."""
        return self._register(name, Meter(self.clock))  # type: ignore[no-any-return]

    def timer(self, name: str) -> Timer:
        """A new timer ``name``."""
        return self._register(name, Timer(self.clock))  # type: ignore[no-any-return]

    def raw(self) -> dict[str, dict]:
        """Every metric as plain data (gauges are read now); ``{}`` when none is registered."""
        if not self.metrics:
            return {}
        now = self.clock()
        return {name: m.raw(now) for name, m in list(self.metrics.items())}

    def roll(self) -> None:
        """Close the metrics window (called by the worker's loop thread)."""
        if self.metrics:
            now = self.clock()
            for m in list(self.metrics.values()):
                m.roll(now)
