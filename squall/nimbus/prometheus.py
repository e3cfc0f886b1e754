"""``GET /metrics``: the Prometheus text exposition format (version 0.0.4), from topology infos.

A pure renderer: ``render(infos, nimbus)`` takes what Nimbus knows and returns the page.
Series per topology, per component, per task and per worker, plus the user metrics a
component registered (``components[c]["metrics"]``) when there are any. Counters end in
``_total``; the spouts' complete latency is a summary (its quantiles over the latest
samples, and sum and count over all time), and the latencies are histograms as well
(complete per spout, execute and process per bolt, per worker, in seconds, buckets from
0.1 ms to 10 s) for ``histogram_quantile()``. The series are listed in docs/ui.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from squall.nimbus.structure import is_system
from squall.runtime.metrics import LATENCY_BUCKETS_MS

Labels = dict[str, Any]

COUNTERS = ("emitted", "transferred", "acked", "failed", "executed")
FAMILIES: dict[str, tuple[str, str]] = {
    "squall_nimbus_leader": ("gauge", "1 if this Nimbus leads"),
    "squall_topologies": ("gauge", "topologies in the store"),
    "squall_topology_info": ("gauge", "1 per topology, with its id, status and code version"),
    "squall_topology_uptime_seconds": ("gauge", "seconds since the topology was submitted"),
    "squall_topology_workers": ("gauge", "workers of the topology"),
    "squall_topology_tasks": ("gauge", "tasks (executors) of the topology"),
    "squall_topology_errors": ("gauge", "errors the components reported (kept in the master)"),
    "squall_topology_master_restarts_total": ("counter", "relaunches of the topology master by Nimbus"),
    "squall_topology_master_store_beat_failures_total": (
        "counter", "store heartbeats of the topology master lost to an unexpected error (it beats on)"),
    **{f"squall_component_{c}_total": ("counter", f"tuples {c} by the component's tasks") for c in COUNTERS},
    "squall_component_capacity": ("gauge", "max over the component's tasks of the share of time in execute"),
    "squall_component_execute_latency_ms": ("gauge", "mean execute latency (sampled)"),
    "squall_component_process_latency_ms": ("gauge", "mean time from execute to ack (sampled)"),
    "squall_component_complete_latency_ms": ("summary", "spout tuple trees: emit to ack"),
    "squall_component_errors": ("gauge", "errors reported by the component"),
    "squall_component_parallelism": ("gauge", "tasks the component runs now"),
    "squall_autoscale_target_parallelism": ("gauge", "the parallelism the autoscaler's last decision "
                                                     "gives the component (topology.autoscale)"),
    "squall_spout_complete_latency_seconds": ("histogram", "spout tuple trees: emit to ack"),
    "squall_bolt_execute_latency_seconds": ("histogram", "time in execute (the sampled executes, "
                                                         "topology.stats.sample.rate)"),
    "squall_bolt_process_latency_seconds": ("histogram", "time from execute to ack (sampled)"),
    **{f"squall_task_{c}_total": ("counter", f"tuples {c} by the task") for c in COUNTERS},
    "squall_task_capacity": ("gauge", "share of time the task spent in execute"),
    "squall_task_execute_latency_ms": ("gauge", "the task's mean execute latency (sampled)"),
    "squall_worker_up": ("gauge", "1 if the worker runs, 0 if it is starting or restarting"),
    "squall_worker_uptime_seconds": ("gauge", "seconds since the worker's process registered"),
    "squall_worker_restarts_total": ("counter", "restarts of the worker"),
    "squall_worker_tasks": ("gauge", "tasks the worker hosts"),
    "squall_worker_memory_bytes": ("gauge", "resident memory of the worker's process, as it measures it"),
    "squall_worker_cpu_seconds_total": ("counter", "CPU seconds (user + system) of the worker's process"),
    "squall_worker_cpu_percent": ("gauge", "CPU of the worker's process between its last two heartbeats "
                                           "(100: one core)"),
    "squall_worker_assigned_memory_bytes": ("gauge", "memory the scheduler assigned to the worker"),
    "squall_worker_assigned_cpu_percent": ("gauge", "CPU the scheduler assigned to the worker "
                                                    "(100: one core)"),
    "squall_worker_rejected_frames_total": ("counter", "frames the worker's transport refused"),
    "squall_worker_memory_limit_bytes": ("gauge", "the worker's memory limit on Spark (squall.spark.memory)"),
    "squall_worker_memory_stops_total": ("counter", "times the worker was stopped over its memory limit"),
    "squall_user_metric": ("gauge", "a metric a component registered (counter, gauge, histogram, "
                                    "meter, timer), aggregated over its tasks"),
}


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _format(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


class _Page:
    def __init__(self) -> None:
        self.samples: dict[str, list[str]] = {name: [] for name in FAMILIES}

    def add(self, family: str, labels: Labels, value: Any, suffix: str = "") -> None:
        v = _number(value)
        if v is None:
            return
        text = ",".join(f'{k}="{_escape(val)}"' for k, val in labels.items())
        self.samples[family].append(f"{family}{suffix}{{{text}}} {_format(v)}" if text
                                    else f"{family}{suffix} {_format(v)}")

    def text(self) -> str:
        lines = []
        for family, rows in self.samples.items():
            if not rows:
                continue
            kind, help_text = FAMILIES[family]
            lines += [f"# HELP {family} {help_text}", f"# TYPE {family} {kind}", *rows]
        return "\n".join(lines) + "\n"


def _user_metrics(page: _Page, labels: Labels, metrics: Any) -> None:
    """Flatten a component's user metrics (docs/metrics.md) into ``squall_user_metric``.

    Each numeric field of a metric is a series (``field`` label), with the metric's ``type``;
    non-numeric fields (a gauge's ``values`` by task, its ``errors``) are left out.
    """
    if not isinstance(metrics, dict):
        return
    for name, value in sorted(metrics.items()):
        if isinstance(value, dict):
            kind = str(value.get("type") or "")
            for field, v in sorted(value.items()):
                if field != "type":
                    series = {**labels, "metric": name, "type": kind, "field": field}
                    page.add("squall_user_metric", series, v)
        else:
            page.add("squall_user_metric", {**labels, "metric": name, "type": "", "field": "value"}, value)


# histogram of the heartbeats (squall.runtime.metrics) -> its family, for spouts or bolts
HISTOGRAMS = {"spout": (("complete", "squall_spout_complete_latency_seconds"),),
              "bolt": (("exec", "squall_bolt_execute_latency_seconds"),
                       ("process", "squall_bolt_process_latency_seconds"))}
LE = [_format(ms / 1000.0) for ms in LATENCY_BUCKETS_MS] + ["+Inf"]


def _histograms(page: _Page, top: Labels, cid: str, kind: str, c: dict, workers: dict[int, str]) -> None:
    """The component's latency histograms, one series set per worker that runs its tasks."""
    by_worker: dict[str, dict[str, dict]] = {}
    for task, t in (c.get("by_task") or {}).items():
        worker = workers.get(int(task), "")
        for name, h in (t.get("histograms") or {}).items():
            into = by_worker.setdefault(worker, {}).setdefault(name, {"counts": [], "sum_ms": 0.0})
            counts = list(h.get("counts") or [])
            before = into["counts"] or [0] * len(counts)
            into["counts"] = [a + b for a, b in zip(before, counts, strict=False)]
            into["sum_ms"] += float(h.get("sum_ms") or 0.0)
    for worker, hists in sorted(by_worker.items()):
        labels = {**top, "component": cid, "worker": worker}
        for name, family in HISTOGRAMS.get(kind, ()):
            h = hists.get(name)
            if h is None or len(h["counts"]) != len(LE):
                continue
            total = 0
            for le, n in zip(LE, h["counts"], strict=True):
                total += n
                page.add(family, {**labels, "le": le}, total, "_bucket")
            page.add(family, labels, h["sum_ms"] / 1000.0, "_sum")
            page.add(family, labels, total, "_count")


def _component(page: _Page, top: Labels, cid: str, kind: str, c: dict, workers: dict[int, str]) -> None:
    labels = {**top, "component": cid, "kind": kind}
    for counter in COUNTERS:
        page.add(f"squall_component_{counter}_total", labels, c.get(counter))
    page.add("squall_component_capacity", labels, c.get("capacity"))
    page.add("squall_component_execute_latency_ms", labels, c.get("execute_latency_ms"))
    page.add("squall_component_process_latency_ms", labels, c.get("process_latency_ms"))
    page.add("squall_component_errors", labels, c.get("errors"))
    page.add("squall_component_parallelism", labels, len(c.get("tasks") or []))
    if kind == "spout":
        fam = "squall_component_complete_latency_ms"
        page.add(fam, {**labels, "quantile": "0.5"}, c.get("complete_latency_p50_ms"))
        page.add(fam, {**labels, "quantile": "0.99"}, c.get("complete_latency_p99_ms"))
        acked = _number(c.get("acked")) or 0.0
        page.add(fam, labels, (_number(c.get("complete_latency_ms")) or 0.0) * acked, "_sum")
        page.add(fam, labels, acked, "_count")
    _histograms(page, top, cid, kind, c, workers)
    for task, t in sorted((c.get("by_task") or {}).items(), key=lambda kv: int(kv[0])):
        tl = {**top, "component": cid, "task": str(task)}
        for counter in COUNTERS:
            page.add(f"squall_task_{counter}_total", tl, t.get(counter))
        page.add("squall_task_capacity", tl, t.get("capacity"))
        page.add("squall_task_execute_latency_ms", tl, t.get("execute_latency_ms"))
    _user_metrics(page, {**top, "component": cid}, c.get("metrics"))


def _autoscale(page: _Page, top: Labels, record: dict | None, comps: dict) -> None:
    """The last decision's parallelism per component (its current one where it changes nothing)."""
    if not record:
        return
    decisions = record.get("decisions") or []
    changes = decisions[-1].get("changes") or {} if decisions else {}
    for cid, c in sorted(comps.items()):
        if is_system(cid):
            continue
        target = changes[cid][1] if cid in changes else len(c.get("tasks") or [])
        page.add("squall_autoscale_target_parallelism", {**top, "component": cid}, target)


def render(infos: Iterable[dict], nimbus: dict) -> str:
    """The page: ``infos`` are topology infos (with ``kinds``: component -> spout/bolt)."""
    page = _Page()
    page.add("squall_nimbus_leader", {}, 1 if nimbus.get("leader") else 0)
    infos = list(infos)
    page.add("squall_topologies", {}, len(infos))
    for info in infos:
        top = {"topology": info["name"]}
        page.add("squall_topology_info", {**top, "id": info.get("id", ""), "status": info.get("status", ""),
                                          "version": info.get("version", "")}, 1)
        page.add("squall_topology_uptime_seconds", top, info.get("uptime_secs"))
        page.add("squall_topology_workers", top, info.get("num_workers"))
        comps = info.get("components") or {}
        page.add("squall_topology_tasks", top, sum(len(c.get("tasks") or []) for c in comps.values()))
        page.add("squall_topology_errors", top, len(info.get("errors") or []))
        page.add("squall_topology_master_restarts_total", top, info.get("restarts", 0))
        failures = (info.get("master") or {}).get("store_beat_failures")
        if failures is not None:  # only while a master answers
            page.add("squall_topology_master_store_beat_failures_total", top, failures)
        kinds = info.get("kinds") or {}
        workers = {int(t): str(w.get("worker"))
                   for w in info.get("workers") or [] for t in w.get("tasks") or []}
        for cid, c in sorted(comps.items()):
            kind = kinds.get(cid) or ("system" if is_system(cid) else "bolt")
            _component(page, top, cid, kind, c, workers)
        _autoscale(page, top, info.get("autoscale"), comps)
        for w in info.get("workers") or []:
            wl = {**top, "worker": str(w.get("worker")), "host": w.get("host") or ""}
            page.add("squall_worker_up", wl, 1 if w.get("state", "RUNNING") == "RUNNING" else 0)
            page.add("squall_worker_uptime_seconds", wl, w.get("uptime_secs"))
            page.add("squall_worker_restarts_total", wl, w.get("restarts", 0))
            page.add("squall_worker_tasks", wl, len(w.get("tasks") or []))
            rss = w.get("rss_mb") if w.get("rss_mb") is not None else w.get("memory_mb")
            if rss is not None:
                page.add("squall_worker_memory_bytes", wl, float(rss) * 1024 * 1024)
            page.add("squall_worker_cpu_seconds_total", wl, w.get("cpu_secs"))
            page.add("squall_worker_cpu_percent", wl, w.get("cpu_percent"))
            assigned = w.get("resources") or {}
            if assigned.get("memory_mb") is not None:
                mem = float(assigned["memory_mb"]) * 1024 * 1024
                page.add("squall_worker_assigned_memory_bytes", wl, mem)
            page.add("squall_worker_assigned_cpu_percent", wl, assigned.get("cpu_percent"))
            page.add("squall_worker_rejected_frames_total", wl, w.get("rejected_frames", 0))
            if w.get("memory_limit_mb") is not None:
                page.add("squall_worker_memory_limit_bytes", wl, float(w["memory_limit_mb"]) * 1024 * 1024)
            page.add("squall_worker_memory_stops_total", wl, w.get("memory_stops", 0))
    return page.text()
