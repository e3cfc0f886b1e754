"""Metric history of one topology: windowed figures and chart series (a pure core).

Nimbus samples each running topology's component figures (cumulative counters, mean
latencies, capacity) every few seconds and feeds them to ``MetricHistory.record``. Each
sample becomes a *delta* since the previous one (a counter that went down was reset by a
relaunch or a rebalance: its new value is the delta), added to four rings of buckets, the
finer ones short and the coarser ones long, so the history stays bounded however long the
topology runs: 10 s buckets over 10 minutes, 1 minute over 3 hours, 10 minutes over a
day, 6 hours over 30 days; plus the all-time totals since the topology was submitted.

Windowed figures are Storm's four windows (10 minutes, 3 hours, 1 day, all time): counts
are the sum of the window's buckets, latencies means weighted by the tuples they cover
(execute and process latency by executed tuples, complete latency by acked spout tuples),
capacity the mean of the buckets' capacities. Given the live figures, a window adds what they
gained since the last sample, so it is whole from the first second. ``to_json``/``from_json``
let Nimbus keep it in its store, so it survives a Nimbus restart. Time is passed in by the caller.
"""

from __future__ import annotations

import math
from typing import Any

# (bucket seconds, buckets kept)
RINGS: tuple[tuple[int, int], ...] = ((10, 60), (60, 180), (600, 144), (21600, 120))
WINDOWS: tuple[int, ...] = (600, 10800, 86400)  # Storm's, besides all time
ALL_TIME = ":all-time"
COUNTERS = ("emitted", "transferred", "acked", "failed", "executed")
# latency -> the counter that weights it
LATENCIES = {"execute_latency_ms": "executed", "process_latency_ms": "executed",
             "complete_latency_ms": "acked"}
# one bucket of one component: counters, latency sums (ms x weight), capacity sum and samples
SLOTS = (*COUNTERS, *(f"{k}_sum" for k in LATENCIES), "capacity_sum", "samples")


def _empty() -> dict[str, float]:
    return dict.fromkeys(SLOTS, 0)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0.0
    return float(value)


def _delta(now: dict, before: dict | None) -> dict[str, float]:
    """The bucket increment of one component between two raw samples."""
    d = _empty()
    reset = before is None or any(_number(now.get(k)) < _number(before.get(k)) for k in COUNTERS)
    for k in COUNTERS:
        d[k] = _number(now.get(k)) - (0 if reset else _number(before.get(k)))  # type: ignore[union-attr]
    for lat, weight in LATENCIES.items():
        total = _number(now.get(lat)) * _number(now.get(weight))
        if not reset:
            total -= _number(before.get(lat)) * _number(before.get(weight))  # type: ignore[union-attr]
        d[f"{lat}_sum"] = max(0.0, total)
    d["capacity_sum"] = _number(now.get("capacity"))
    d["samples"] = 1
    return d


def _add(into: dict[str, float], d: dict[str, float]) -> None:
    for k in SLOTS:
        into[k] = into.get(k, 0) + d[k]


def figures(bucket: dict[str, float]) -> dict[str, float]:
    """A summed bucket as figures: counters, weighted mean latencies, mean capacity.

    >>> f = figures({"executed": 4, "execute_latency_ms_sum": 10.0, "capacity_sum": 1.0, "samples": 2})
    >>> f["execute_latency_ms"], f["capacity"]
    (2.5, 0.5)
    """
    out: dict[str, float] = {k: int(bucket.get(k, 0)) for k in COUNTERS}
    for lat, weight in LATENCIES.items():
        n = bucket.get(weight, 0)
        out[lat] = bucket.get(f"{lat}_sum", 0) / n if n else 0.0
    samples = bucket.get("samples", 0)
    out["capacity"] = bucket.get("capacity_sum", 0) / samples if samples else 0.0
    return out


def ring_for(window: int) -> tuple[int, int]:
    """The finest ring that covers ``window`` seconds (the coarsest if none does)."""
    for res, n in RINGS:
        if res * n >= window:
            return res, n
    return RINGS[-1]


class MetricHistory:
    """The history of one topology's components (see the module docstring). Not thread-safe."""

    def __init__(self) -> None:
        self.last: dict[str, dict] = {}  # component -> its previous raw sample
        self.last_time: float | None = None
        # ring resolution -> bucket start (seconds) -> component -> bucket
        self.rings: dict[int, dict[int, dict[str, dict[str, float]]]] = {res: {} for res, _ in RINGS}
        self.total: dict[str, dict[str, float]] = {}
        self.first_time: float | None = None

    def record(self, now: float, components: dict[str, dict]) -> None:
        """Add one sample: ``components`` maps component id to its cumulative figures."""
        if self.last_time is not None and now < self.last_time:
            return  # a sample from before the last one (a clock step back): skip it
        if self.first_time is None:
            self.first_time = now
        for comp, raw in components.items():
            d = _delta(raw, self.last.get(comp))
            _add(self.total.setdefault(comp, _empty()), d)
            for res, _ in RINGS:
                ring = self.rings[res]
                start = int(now // res) * res
                _add(ring.setdefault(start, {}).setdefault(comp, _empty()), d)
            self.last[comp] = {k: raw.get(k) for k in (*COUNTERS, *LATENCIES, "capacity")}
        for res, n in RINGS:  # drop what fell out of each ring
            ring = self.rings[res]
            oldest = int(now // res) * res - (n - 1) * res
            for start in [s for s in ring if s < oldest]:
                del ring[start]
        self.last_time = now

    def window(self, component: str, window: int | None, now: float,
               live: dict | None = None) -> dict[str, float]:
        """Figures of ``component`` over the last ``window`` seconds (None: all time).

        ``live``: the component's cumulative figures now. What they gained since the last
        sample counts too, so a window holds everything of its last ``window`` seconds from
        the first second on (as Storm's), not only what the samples caught so far.
        """
        summed = _empty()
        if window is None:
            _add(summed, self.total.get(component) or _empty())
        else:
            res, _ = ring_for(window)
            since = now - window
            for start, comps in self.rings[res].items():
                if start + res > since and start <= now and component in comps:
                    _add(summed, comps[component])
        if live is not None and (self.last_time is None or now >= self.last_time):
            _add(summed, _delta(live, self.last.get(component)))
        return figures(summed)

    def components(self) -> list[str]:
        """Every component seen, sorted."""
        return sorted(self.total)

    def series(self, window: int, now: float, components: list[str] | None = None) -> dict:
        """Chart points over the last ``window`` seconds: one per bucket of the ring covering it.

        Each point has ``time`` (the bucket's start, seconds since the epoch) and, per component,
        its figures in that bucket; rates are ``count / resolution``.
        """
        res, _ = ring_for(window)
        since = now - window
        wanted = components if components is not None else self.components()
        points = []
        for start in sorted(self.rings[res]):
            if start + res <= since or start > now:
                continue
            comps = self.rings[res][start]
            points.append({"time": start, "components": {
                c: figures(comps[c]) for c in wanted if c in comps}})
        return {"window": window, "resolution": res, "points": points}

    # ---- persistence ---------------------------------------------------------------------

    def to_json(self) -> dict:
        """A JSON-able copy (bucket starts become strings, as JSON keys must)."""
        def compact(b: dict[str, float]) -> list[float]:
            return [round(b.get(k, 0), 3) for k in SLOTS]
        return {
            "slots": list(SLOTS), "first_time": self.first_time, "last_time": self.last_time,
            "last": self.last,
            "total": {c: compact(b) for c, b in self.total.items()},
            "rings": {str(res): {str(s): {c: compact(b) for c, b in comps.items()}
                                 for s, comps in ring.items()} for res, ring in self.rings.items()},
        }

    @classmethod
    def from_json(cls, data: dict | None) -> MetricHistory:
        """The history ``to_json`` made; an empty one if ``data`` is missing or of another layout."""
        h = cls()
        if not data or data.get("slots") != list(SLOTS):
            return h

        def expand(values: list[float]) -> dict[str, float]:
            return dict(zip(SLOTS, values, strict=False))
        h.first_time = data.get("first_time")
        h.last_time = data.get("last_time")
        h.last = dict(data.get("last") or {})
        h.total = {c: expand(v) for c, v in (data.get("total") or {}).items()}
        for res_text, ring in (data.get("rings") or {}).items():
            res = int(res_text)
            if res in h.rings:
                h.rings[res] = {int(s): {c: expand(v) for c, v in comps.items()} for s, comps in ring.items()}
        return h
