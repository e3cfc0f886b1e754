"""Figures of user metrics, per task and per component, from their plain data (pure).

Input is what ``MetricRegistry.raw()`` gives for each task (the same data a Spark worker's
heartbeat carries). The shapes, per metric name (``docs/metrics.md``):

- counter: ``count`` (component: the tasks' sum).
- gauge: ``value`` (component: ``values`` by task, and ``sum``/``min``/``max``/``mean`` of the
  numeric ones, None when none is numeric; ``errors`` by task when a gauge raised).
- histogram: ``count`` (since start), and over the recent windows ``min``, ``max``, ``mean``,
  ``p50``, ``p95``, ``p99`` (None while the windows hold no value).
- timer: as a histogram with ``_ms`` names (``min_ms`` ... ``p99_ms``), plus ``rate`` and
  ``mean_rate`` (per second).
- meter: ``count``, ``rate`` (per second over the recent windows), ``mean_rate`` (since start);
  the component sums them.

Component percentiles merge the tasks' samples, each weighted by how many values it stands for.
"""

from __future__ import annotations

from typing import Any

QUANTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))


def weighted_percentile(pairs: list[tuple[float, float]], q: float) -> float | None:
    """Nearest-rank ``q``-quantile of ``(value, weight)`` pairs; None when empty."""
    if not pairs:
        return None
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    target = q * total
    acc = 0.0
    for value, weight in pairs:
        acc += weight
        if acc >= target - 1e-9 * total:
            return value
    return pairs[-1][0]


def window_figures(windows: list[dict], suffix: str = "") -> dict[str, Any]:
    """min/max/mean/p50/p95/p99 of histogram windows (from any number of tasks)."""
    n = sum(w["n"] for w in windows)
    full = [w for w in windows if w["n"]]
    pairs = [(v, w["n"] / len(w["samples"])) for w in full if w["samples"] for v in w["samples"]]
    out: dict[str, Any] = {
        "min" + suffix: min((w["min"] for w in full), default=None),
        "max" + suffix: max((w["max"] for w in full), default=None),
        "mean" + suffix: sum(w["sum"] for w in full) / n if n else None,
    }
    for name, q in QUANTILES:
        out[name + suffix] = weighted_percentile(pairs, q)
    return out


def _figures(kind: str, raws: list[dict]) -> dict[str, Any]:
    """Figures of one metric from the raw data of one or more tasks (same kind)."""
    if kind == "counter":
        return {"type": kind, "count": sum(r["count"] for r in raws)}
    if kind == "meter":
        return {"type": kind, "count": sum(r["count"] for r in raws),
                "rate": sum(r["rate"] for r in raws), "mean_rate": sum(r["mean_rate"] for r in raws)}
    windows = [w for r in raws for w in r["windows"]]
    out: dict[str, Any] = {"type": kind, "count": sum(r["count"] for r in raws)}
    if kind == "timer":
        out.update(window_figures(windows, "_ms"))
        out["rate"] = sum(r["rate"] for r in raws)
        out["mean_rate"] = sum(r["mean_rate"] for r in raws)
    else:
        out.update(window_figures(windows))
    return out


def task_metrics(raw: dict[str, dict]) -> dict[str, dict]:
    """One task's figures, by metric name."""
    out = {}
    for name, r in raw.items():
        if r["type"] == "gauge":
            out[name] = {k: v for k, v in r.items()}
        else:
            out[name] = _figures(r["type"], [r])
    return out


def _gauge(by_task: dict[int, dict]) -> dict[str, Any]:
    values = {task: r["value"] for task, r in sorted(by_task.items())}
    numbers = [v for v in values.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out: dict[str, Any] = {
        "type": "gauge", "values": values,
        "sum": sum(numbers) if numbers else None,
        "min": min(numbers, default=None), "max": max(numbers, default=None),
        "mean": sum(numbers) / len(numbers) if numbers else None,
    }
    errors = {task: r["error"] for task, r in sorted(by_task.items()) if "error" in r}
    if errors:
        out["errors"] = errors
    return out


def component_metrics(raws: dict[int, dict[str, dict]]) -> dict[str, dict]:
    """A component's figures by metric name, from each task's raw data."""
    by_name: dict[str, dict[int, dict]] = {}
    for task, raw in raws.items():
        for name, r in raw.items():
            by_name.setdefault(name, {})[task] = r
    out = {}
    for name, by_task in sorted(by_name.items()):
        kinds = {r["type"] for r in by_task.values()}
        if len(kinds) > 1:  # tasks registered one name as different kinds: nothing to merge
            out[name] = {"type": "mixed", "types": {t: r["type"] for t, r in sorted(by_task.items())}}
        elif kinds == {"gauge"}:
            out[name] = _gauge(by_task)
        else:
            out[name] = _figures(kinds.pop(), list(by_task.values()))
    return out


class ReceivedMetrics:
    """A task's user metrics as received from its worker (a heartbeat): read-only plain data."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, dict]) -> None:
        self.data = data

    def raw(self) -> dict[str, dict]:
        """The data as received."""
        return self.data

    def roll(self) -> None:
        """The worker rolls the windows, not the reader."""
