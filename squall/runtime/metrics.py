"""Per-task counters and latencies, written by the task's thread, read by anyone.

Per stream, as Storm's UI shows them: each output stream's emitted and transferred counts
are exact (counters on the collector's route of that stream, ``outputs``); each input
stream's (source component, stream) figures come from the tuples already sampled for the
execute and process latencies (``topology.stats.sample.rate``, as Storm samples its
stats): the sampled share of a stream scales the task's executed, acked and failed totals,
exact when a task reads one stream.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from squall.runtime.user_metrics import component_metrics, task_metrics

# The counters of TaskMetrics, in the order heartbeats carry them.
FIELDS = ("component", "task", "emitted", "transferred", "acked", "failed", "executed",
          "exec_sampled_ms", "exec_samples", "process_ms", "process_samples", "complete_ms",
          "complete_samples", "complete_recent", "capacity", "complete_hist", "exec_hist",
          "process_hist")
# Upper bounds (ms) of the latency histograms' buckets, 0.1 ms to 10 s (then +Inf): what
# Prometheus's histogram_quantile() reads (squall_*_latency_seconds on /metrics).
LATENCY_BUCKETS_MS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
                      1000.0, 2500.0, 5000.0, 10000.0)
HISTOGRAMS = ("complete_hist", "exec_hist", "process_hist")


_DEQUE_APPEND: Any = deque.append  # a C global, compiled (metrics.pxd)


def bucket_index(ms: float) -> int:
    """The bucket of ``LATENCY_BUCKETS_MS`` that ``ms`` falls in (``le``: a bound holds itself).

    Comparisons with literals rather than a search of the tuple: compiled, this is a few C
    comparisons on every ack (a test keeps it equal to ``bisect_left`` over the bounds).
    """
    if ms <= 10.0:
        if ms <= 0.5:
            return 0 if ms <= 0.1 else (1 if ms <= 0.25 else 2)
        if ms <= 2.5:
            return 3 if ms <= 1.0 else 4
        return 5 if ms <= 5.0 else 6
    if ms <= 250.0:
        if ms <= 50.0:
            return 7 if ms <= 25.0 else 8
        return 9 if ms <= 100.0 else 10
    if ms <= 2500.0:
        return 11 if ms <= 500.0 else (12 if ms <= 1000.0 else 13)
    return 14 if ms <= 5000.0 else (15 if ms <= 10000.0 else 16)


def empty_histogram() -> list[int]:
    """Counts per bucket of ``LATENCY_BUCKETS_MS``, the last one above 10 s (not cumulative)."""
    return [0] * (len(LATENCY_BUCKETS_MS) + 1)


class TaskMetrics:
    """Counters of one task. Plain numbers: reads from other threads may lag, never tear."""

    __slots__ = (*FIELDS, "_window_executed", "user", "outputs", "inputs")

    def __init__(self, component: str, task: int, emitted: int = 0, transferred: int = 0,
                 acked: int = 0, failed: int = 0, executed: int = 0,
                 exec_sampled_ms: float = 0.0, exec_samples: int = 0, process_ms: float = 0.0,
                 process_samples: int = 0, complete_ms: float = 0.0, complete_samples: int = 0,
                 capacity: float = 0.0, complete_hist: list[int] | None = None,
                 exec_hist: list[int] | None = None, process_hist: list[int] | None = None) -> None:
        self.component = component
        self.task = task
        self.emitted = emitted
        self.transferred = transferred
        self.acked = acked
        self.failed = failed
        self.executed = executed
        self.exec_sampled_ms = exec_sampled_ms
        self.exec_samples = exec_samples
        self.process_ms = process_ms
        self.process_samples = process_samples
        self.complete_ms = complete_ms
        self.complete_samples = complete_samples
        # the latest samples only: percentiles follow the current load, and stay cheap to sort
        self.complete_recent: deque[float] = deque(maxlen=4096)
        self.capacity = capacity
        # latency histograms over the task's life: counts per bucket of LATENCY_BUCKETS_MS
        self.complete_hist = list(complete_hist) if complete_hist else empty_histogram()
        self.exec_hist = list(exec_hist) if exec_hist else empty_histogram()
        self.process_hist = list(process_hist) if process_hist else empty_histogram()
        self._window_executed = 0
        # the task's user metrics: anything with ``raw()`` (plain data per metric name) and
        # ``roll()`` (close a window): the live registry in a worker, a received copy elsewhere
        self.user: Any = None
        # stream -> its route (live: counters ``emitted``, ``transferred``) or [emitted, transferred]
        self.outputs: Any = None
        # source component -> stream -> [exec samples, exec ms, acked samples, process ms, failed samples]
        self.inputs: Any = None

    def sample_input(self, component: str, stream: str, kind: int, ms: float) -> None:
        """One sampled tuple of ``(component, stream)`` was executed, acked or failed (``kind``)."""
        inputs = self.inputs
        if inputs is None:
            inputs = self.inputs = {}
        streams = inputs.get(component)
        if streams is None:
            streams = inputs[component] = {}
        row = streams.get(stream)
        if row is None:
            row = streams[stream] = [0, 0.0, 0, 0.0, 0]
        row[kind] += 1
        if kind != FAILED_SAMPLES:
            row[kind + 1] += ms

    def stream_counts(self) -> dict:
        """Plain data: ``{"out": {stream: [emitted, transferred]}, "in": {component: {stream: row}}}``."""
        out = {}
        for stream, route in list((self.outputs or {}).items()):
            out[stream] = list(route) if isinstance(route, list) else [route.emitted, route.transferred]
        inputs = {c: {s: list(row) for s, row in list(streams.items())}
                  for c, streams in list((self.inputs or {}).items())}
        return {"out": out, "in": inputs}

    def record_complete(self, ms: float) -> None:
        """A spout tuple tree completed ``ms`` after its emit."""
        self.complete_ms += ms
        self.complete_samples += 1
        recent = self.complete_recent
        if type(recent) is deque:
            _DEQUE_APPEND(recent, ms)  # by name, compiled: about 250 instructions per tree
        else:
            recent.append(ms)
        self.complete_hist[bucket_index(ms)] += 1

    def record_execute(self, ms: float, n: int) -> None:
        """``n`` sampled executes took ``ms`` in all (a batch: ``ms / n`` each)."""
        self.exec_sampled_ms += ms
        self.exec_samples += n
        self.exec_hist[bucket_index(ms / n)] += n

    def record_process(self, ms: float) -> None:
        """A sampled tuple was acked ``ms`` after its execute began."""
        self.process_ms += ms
        self.process_samples += 1
        self.process_hist[bucket_index(ms)] += 1

    @property
    def execute_latency_ms(self) -> float:
        """Mean execute latency of the sampled executes."""
        return self.exec_sampled_ms / self.exec_samples if self.exec_samples else 0.0

    @property
    def process_latency_ms(self) -> float:
        """Mean time from a tuple's execute to its ack (sampled)."""
        return self.process_ms / self.process_samples if self.process_samples else 0.0

    @property
    def complete_latency_ms(self) -> float:
        """Mean time from a spout emit to its tree's ack."""
        return self.complete_ms / self.complete_samples if self.complete_samples else 0.0

    def roll_window(self, window_secs: float) -> None:
        """Close a metrics window: capacity = share of the window spent in execute."""
        done = self.executed - self._window_executed
        self._window_executed = self.executed
        if window_secs > 0:
            self.capacity = min(1.0, done * self.execute_latency_ms / (window_secs * 1000.0))
        if self.user is not None:
            self.user.roll()

    def user_raw(self) -> dict:
        """The task's user metrics as plain data (``{}`` when it registered none)."""
        return self.user.raw() if self.user is not None else {}


EXEC_SAMPLES, ACKED_SAMPLES, FAILED_SAMPLES = 0, 2, 4  # kinds of ``sample_input``


def percentile(samples: list[float], q: float, *, ordered: bool = False) -> float:
    """The ``q``-quantile (0..1) of ``samples`` by nearest rank; 0.0 when empty."""
    if not samples:
        return 0.0
    data = samples if ordered else sorted(samples)
    k = min(len(data) - 1, max(0, int(round(q * len(data) + 0.5)) - 1))
    return data[k]


def aggregate(metrics: list[TaskMetrics], per_task: bool = True) -> dict:
    """Component-level figures from its tasks' metrics (``by_task`` only if ``per_task``).

    Each task's histograms are the most of it: 1,000 workers' tasks take a second.
    """
    def weighted(total: str, count: str) -> float:
        n = sum(getattr(m, count) for m in metrics)
        return sum(getattr(m, total) for m in metrics) / n if n else 0.0

    recent = sorted(x for m in metrics for x in list(m.complete_recent))
    streams = stream_figures(metrics)
    raws = {m.task: m.user_raw() for m in metrics}
    by_task = {
        m.task: {
            "metrics": task_metrics(raws[m.task]),
            "emitted": m.emitted, "transferred": m.transferred, "acked": m.acked,
            "failed": m.failed, "executed": m.executed,
            "execute_latency_ms": m.execute_latency_ms,
            "process_latency_ms": m.process_latency_ms,
            "complete_latency_ms": m.complete_latency_ms, "capacity": m.capacity,
            "histograms": histograms([m]),
        }
        for m in sorted(metrics, key=lambda m: m.task)
    } if per_task else None
    out = {
        "tasks": sorted(m.task for m in metrics),
        "emitted": sum(m.emitted for m in metrics),
        "transferred": sum(m.transferred for m in metrics),
        "acked": sum(m.acked for m in metrics),
        "failed": sum(m.failed for m in metrics),
        "executed": sum(m.executed for m in metrics),
        "execute_latency_ms": weighted("exec_sampled_ms", "exec_samples"),
        "process_latency_ms": weighted("process_ms", "process_samples"),
        "complete_latency_ms": weighted("complete_ms", "complete_samples"),
        "complete_latency_p50_ms": percentile(recent, 0.50, ordered=True),
        "complete_latency_p99_ms": percentile(recent, 0.99, ordered=True),
        "capacity": max((m.capacity for m in metrics), default=0.0),
        "metrics": component_metrics(raws),
        "histograms": histograms(metrics),
        "by_task": by_task,
        "streams": streams,
    }
    if by_task is None:
        del out["by_task"]
    return out


# histogram -> the running total of its observations (ms), for the Prometheus ``_sum``
_HIST_SUMS = {"complete_hist": "complete_ms", "exec_hist": "exec_sampled_ms", "process_hist": "process_ms"}


def histograms(metrics: list[TaskMetrics]) -> dict:
    """The latency histograms of ``metrics`` summed: per name, ``counts`` and ``sum_ms``."""
    out = {}
    for name in HISTOGRAMS:
        counts = empty_histogram()
        for m in metrics:
            for i, c in enumerate(getattr(m, name)):
                counts[i] += c
        out[name.removesuffix("_hist")] = {
            "counts": counts, "sum_ms": sum(getattr(m, _HIST_SUMS[name]) for m in metrics)}
    return out


def stream_figures(metrics: list[TaskMetrics]) -> dict:
    """Per output stream and per input (component, stream) figures of a component's tasks.

    ``outputs``: a list of stream, emitted, transferred (exact). ``inputs``: a list of
    component, stream, executed, execute and process latency, acked, failed, estimated per
    task from its sampled tuples (latencies None where none was sampled).
    """
    outputs: dict[str, dict] = {}
    inputs: dict[tuple[str, str], dict] = {}
    for m in metrics:
        counts = m.stream_counts()
        for stream, (emitted, transferred) in counts["out"].items():
            row = outputs.setdefault(stream, {"stream": stream, "emitted": 0, "transferred": 0})
            row["emitted"] += emitted
            row["transferred"] += transferred
        _add_inputs(inputs, m, counts["in"])
    rows = sorted(inputs.values(), key=lambda r: (r["component"], r["stream"]))
    for r in rows:
        samples, acks = r.pop("_exec_samples"), r.pop("_ack_samples")
        r["execute_latency_ms"] = r.pop("_exec_ms") / samples if samples else None
        r["process_latency_ms"] = r.pop("_process_ms") / acks if acks else None
        for key in ("executed", "acked", "failed"):
            r[key] = round(r[key]) if r[key] is not None else None
    return {"outputs": [outputs[s] for s in sorted(outputs)], "inputs": rows}


def _add_inputs(inputs: dict, m: TaskMetrics, sampled: dict) -> None:
    """Fold one task's sampled inputs in, scaling its totals by each stream's sampled share."""
    totals = [0, 0, 0]
    for streams in sampled.values():
        for row in streams.values():
            totals[0] += row[EXEC_SAMPLES]
            totals[1] += row[ACKED_SAMPLES]
            totals[2] += row[FAILED_SAMPLES]
    for component, streams in sampled.items():
        for stream, row in streams.items():
            r = inputs.setdefault((component, stream), {
                "component": component, "stream": stream, "executed": 0.0, "acked": 0.0, "failed": 0.0,
                "_exec_samples": 0, "_exec_ms": 0.0, "_ack_samples": 0, "_process_ms": 0.0})
            for key, total, kind, whole in (("executed", totals[0], EXEC_SAMPLES, m.executed),
                                            ("acked", totals[1], ACKED_SAMPLES, m.acked),
                                            ("failed", totals[2], FAILED_SAMPLES, m.failed)):
                r[key] += whole * row[kind] / total if total else 0.0
            r["_exec_samples"] += row[EXEC_SAMPLES]
            r["_exec_ms"] += row[EXEC_SAMPLES + 1]
            r["_ack_samples"] += row[ACKED_SAMPLES]
            r["_process_ms"] += row[ACKED_SAMPLES + 1]
