"""Storm UI's REST API shapes (docs/STORM-UI-REST-API.md of Apache Storm), from squall's figures.

Pure functions: they take what Nimbus knows (a topology's ``info``, its shape from
``squall.nimbus.structure``, its configuration, its ``MetricHistory``) and return the JSON
Storm's UI daemon returns, with Storm's field names and formats (latencies and capacity as
strings with three decimals, uptimes as ``"1d 2h 3m 4s"``), so that tools written for
Storm's UI read squall. Where squall measures less than Storm (figures per stream rather
than per component, memory per worker), the field is there with what squall knows: see
docs/ui.md. In squall each task runs in an executor of its own: executors equal tasks.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from squall._version import __version__
from squall.nimbus.history import ALL_TIME, WINDOWS, MetricHistory
from squall.nimbus.structure import is_system

ERROR_CHARS = 200  # Storm truncates a component's last error in the topology page


def pretty_uptime(secs: float | int | None) -> str:
    """Storm's ``prettyUptimeSec``: ``"1d 0h 0m 0s"``; empty for zero.

    >>> pretty_uptime(600), pretty_uptime(10800), pretty_uptime(86400), pretty_uptime(65)
    ('10m 0s', '3h 0m 0s', '1d 0h 0m 0s', '1m 5s')
    """
    left = int(secs or 0)
    parts: list[str] = []
    for unit, div in (("s", 60), ("m", 60), ("h", 24), ("d", None)):
        if left <= 0:
            break
        if div is None:
            parts.insert(0, f"{left}{unit}")
        else:
            parts.insert(0, f"{left % div}{unit}")
            left //= div
    return " ".join(parts)


def window_hint(window: str) -> str:
    """Storm's ``getWindowHint``: ``"All time"`` or the window in pretty form.

    >>> window_hint(":all-time"), window_hint("600")
    ('All time', '10m 0s')
    """
    return "All time" if window == ALL_TIME else pretty_uptime(int(window))


def float_str(value: Any) -> str:
    """Storm's ``StatsUtil.floatStr``: three decimals, as a string."""
    try:
        return f"{float(value or 0):.3f}"
    except (TypeError, ValueError):
        return "0.000"


def parse_window(raw: str | None) -> str:
    """The ``window`` query parameter: seconds as a string, or ``:all-time`` (the default)."""
    if raw in (None, "", ALL_TIME, "all-time", "all"):
        return ALL_TIME
    assert raw is not None
    if not raw.isdigit() or int(raw) <= 0:
        raise ValueError(f"window must be a number of seconds or {ALL_TIME}, got {raw!r}")
    return raw


def error_text(error: dict) -> str:
    """An error as Storm's UI shows it: the message first (it survives truncation), then the traceback."""
    message, tb = error.get("message") or "", error.get("traceback") or ""
    return f"{message}\n{tb}".strip() if message and message not in tb.splitlines()[:1] else tb or message


def _port(worker: dict) -> int | None:
    address = worker.get("address") or ""
    tail = address.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


def worker_log_link(name: str, worker: dict | None) -> str:
    """Where the UI shows a worker's log (squall's logviewer endpoint)."""
    if worker is None:
        return ""
    return f"/api/v1/topologies/{quote(name)}/logs?worker={worker.get('worker')}"


def _task_worker(info: dict) -> dict[int, dict]:
    return {t: w for w in info.get("workers") or [] for t in w.get("tasks") or []}


def _requested(spec: dict | None) -> dict:
    """Storm's requested resource fields of one component (memory per task x tasks)."""
    spec = spec or {}
    tasks = spec.get("tasks") or 0
    mem = float(spec.get("memory_load_mb") or 0.0) * tasks
    cpu = float(spec.get("cpu_load_percent") or 0.0) * tasks
    return {"requestedMemOnHeap": mem, "requestedMemOffHeap": 0.0, "requestedCpu": cpu}


class TopologyView:
    """One topology as Nimbus sees it: info, shape, configuration, history, the time."""

    def __init__(self, info: dict, shape: dict[str, dict], conf: dict, history: MetricHistory | None,
                 now: float) -> None:
        self.info = info
        self.shape = shape
        self.conf = conf
        self.history = history
        self.now = now
        self.components: dict[str, dict] = info.get("components") or {}
        self.by_task = _task_worker(info)
        # task -> its component, for the workers' rows (a scan of every component per task was T x T)
        self.task_component = {t: c for c, f in self.components.items() for t in f.get("tasks") or []}
        # when each task's current process started it (the master's, or its stored, records)
        self.task_started = {t["task"]: t["start_time"] for t in info.get("tasks") or []
                             if isinstance(t, dict) and t.get("start_time")}

    @property
    def name(self) -> str:
        """The topology's name."""
        return self.info["name"]

    @property
    def id(self) -> str:
        """The topology's id."""
        return self.info["id"]

    def kind(self, cid: str) -> str:
        """``spout`` or ``bolt``."""
        return (self.shape.get(cid) or {}).get("kind") or "bolt"

    def spouts(self) -> list[str]:
        """The spouts' ids, sorted."""
        return sorted(c for c in self.all_components() if self.kind(c) == "spout")

    def bolts(self) -> list[str]:
        """The bolts' ids, sorted (squall's own components left out)."""
        return sorted(c for c in self.all_components() if self.kind(c) == "bolt")

    def all_components(self) -> list[str]:
        """Every component the user declared (squall's own left out), sorted."""
        return sorted(set(self.shape) | {c for c in self.components if not is_system(c)})

    def tasks(self, cid: str) -> list[int]:
        """The task ids of ``cid`` now running."""
        live = self.components.get(cid, {}).get("tasks")
        if live:
            return list(live)
        return []

    def num_tasks(self, cid: str) -> int:
        """How many tasks ``cid`` has (running, else declared)."""
        return len(self.tasks(cid)) or int((self.shape.get(cid) or {}).get("tasks") or 0)

    def uptime_secs(self) -> int:
        """Seconds since the topology master started."""
        return int(self.info.get("uptime_secs") or 0)

    # ---- figures per window ------------------------------------------------------------

    def figures(self, cid: str, window: str) -> dict:
        """``cid``'s figures over ``window``: all time from the live info, else from history."""
        live = self.components.get(cid)
        if window == ALL_TIME:
            if live is not None:
                return live
            return self.history.window(cid, None, self.now) if self.history else {}
        # the live figures' gain since the last sample counts: the window is whole from the start
        history = self.history if self.history is not None else MetricHistory()
        return history.window(cid, int(window), self.now, live=live)

    def topology_figures(self, window: str) -> dict:
        """Topology totals: emitted and transferred by every component, the rest by spouts."""
        per = {c: self.figures(c, window) for c in self.all_components()}
        spouts = self.spouts()
        acked = sum(int(per[c].get("acked") or 0) for c in spouts)
        weighted = sum(float(per[c].get("complete_latency_ms") or 0) * int(per[c].get("acked") or 0)
                       for c in spouts)
        return {
            "emitted": sum(int(f.get("emitted") or 0) for f in per.values()),
            "transferred": sum(int(f.get("transferred") or 0) for f in per.values()),
            "acked": acked, "failed": sum(int(per[c].get("failed") or 0) for c in spouts),
            "complete_latency_ms": weighted / acked if acked else 0.0,
        }

    def windows(self) -> list[str]:
        """Storm's four windows, as the ``window`` parameter spells them."""
        return [*(str(w) for w in WINDOWS), ALL_TIME]

    # ---- errors ------------------------------------------------------------------------

    def errors(self, cid: str) -> list[dict]:
        """The errors ``cid`` reported, oldest first."""
        return [e for e in self.info.get("errors") or [] if e.get("component") == cid]

    def error_fields(self, error: dict | None, *, truncate: bool) -> dict:
        """Storm's last-error fields of one error (empty strings and nulls when none)."""
        if not error:
            return {"lastError": "", "errorHost": "", "errorPort": None, "errorWorkerLogLink": "",
                    "errorTime": None, "errorLapsedSecs": None}
        worker = self.by_task.get(int(error.get("task") or 0))
        text = error_text(error)
        when = int(error.get("time") or 0)
        return {"lastError": text[:ERROR_CHARS] if truncate else text,
                "errorHost": (worker or {}).get("host") or "", "errorPort": _port(worker or {}),
                "errorWorkerLogLink": worker_log_link(self.name, worker),
                "errorTime": when, "errorLapsedSecs": max(0, int(self.now) - when)}


# ---- topology/summary and topology/:id ---------------------------------------------------------


def topology_summary_row(summary: dict, shape: dict[str, dict] | None = None) -> dict:
    """One entry of ``/api/v1/topology/summary`` from a row of Nimbus's topology list."""
    uptime = int(summary.get("uptime_secs") or 0)
    tasks = summary.get("num_tasks")
    if tasks is None and shape:
        tasks = sum(s["tasks"] for s in shape.values())
    req = [_requested(s) for s in (shape or {}).values()]
    mem = sum(r["requestedMemOnHeap"] for r in req)
    cpu = sum(r["requestedCpu"] for r in req)
    return {
        "id": summary["id"], "encodedId": quote(summary["id"], safe=""), "name": summary["name"],
        "owner": "", "status": summary["status"], "uptime": pretty_uptime(uptime), "uptimeSeconds": uptime,
        "tasksTotal": tasks or 0, "workersTotal": summary.get("num_workers") or 0,
        "executorsTotal": tasks or 0, "replicationCount": 1,
        "requestedMemOnHeap": mem, "requestedMemOffHeap": 0.0, "requestedTotalMem": mem, "requestedCpu": cpu,
        "assignedMemOnHeap": mem, "assignedMemOffHeap": 0.0, "assignedTotalMem": mem, "assignedCpu": cpu,
        "schedulerInfo": None, "topologyVersion": str(summary.get("version")),
        # squall's own, for its UI
        "emitted": summary.get("emitted"), "acked": summary.get("acked"), "failed": summary.get("failed"),
        "numErrors": summary.get("num_errors"), "version": summary.get("version"),
        "upgrade": summary.get("upgrade"), "master": summary.get("master"),
    }


def _window_stats(view: TopologyView, window: str) -> dict:
    t = view.topology_figures(window)
    return {"windowPretty": window_hint(window), "window": window, "emitted": t["emitted"],
            "transferred": t["transferred"], "completeLatency": float_str(t["complete_latency_ms"]),
            "acked": t["acked"], "failed": t["failed"]}


def worker_row(view: TopologyView, worker: dict) -> dict:
    """A worker as Storm's ``workers`` entries describe it (plus squall's own fields)."""
    counts: dict[str, int] = {}
    for t in worker.get("tasks") or []:
        comp = view.task_component.get(t)
        if comp is not None and not is_system(comp):
            counts[comp] = counts.get(comp, 0) + 1
    uptime = int(worker.get("uptime_secs") or 0)
    assigned = worker.get("resources") or {}  # the scheduler's; 0 where it assigned none
    return {
        "supervisorId": worker.get("host") or "", "host": worker.get("host") or "", "port": _port(worker),
        "topologyId": view.id, "topologyName": view.name, "executorsTotal": len(worker.get("tasks") or []),
        "assignedMemOnHeap": float(assigned.get("memory_mb") or 0.0), "assignedMemOffHeap": 0.0,
        "assignedCpu": float(assigned.get("cpu_percent") or 0.0),
        "componentNumTasks": counts, "uptime": pretty_uptime(uptime), "uptimeSeconds": uptime,
        "workerLogLink": worker_log_link(view.name, worker),
        # squall's own
        "worker": worker.get("worker"), "pid": worker.get("pid"), "tasks": worker.get("tasks") or [],
        "restarts": worker.get("restarts", 0), "state": worker.get("state", "RUNNING"),
        "version": worker.get("version"), "lastWorkerError": worker.get("last_error"),
        "memoryMb": worker.get("rss_mb") if worker.get("rss_mb") is not None else worker.get("memory_mb"),
        # measured by the worker process itself, beside Storm's assigned figures
        "rssMb": worker.get("rss_mb"), "cpuPercent": worker.get("cpu_percent"),
        # its memory limit on Spark and its stops over it (squall.spark.memory)
        "memoryLimitMb": worker.get("memory_limit_mb"), "memoryStops": worker.get("memory_stops", 0),
        "memoryStop": worker.get("memory_stop"),
    }


def _common(view: TopologyView, cid: str, f: dict) -> dict:
    n = view.num_tasks(cid)
    return {"executors": n, "tasks": n, "emitted": int(f.get("emitted") or 0),
            "transferred": int(f.get("transferred") or 0), "acked": int(f.get("acked") or 0),
            "failed": int(f.get("failed") or 0), **_requested(view.shape.get(cid))}


def spout_row(view: TopologyView, cid: str, window: str) -> dict:
    """One entry of ``spouts`` in ``topology/:id``."""
    f = view.figures(cid, window)
    errs = view.errors(cid)
    return {"spoutId": cid, "encodedSpoutId": quote(cid, safe=""), **_common(view, cid, f),
            "completeLatency": float_str(f.get("complete_latency_ms")),
            **view.error_fields(errs[-1] if errs else None, truncate=True)}


def bolt_row(view: TopologyView, cid: str, window: str) -> dict:
    """One entry of ``bolts`` in ``topology/:id``."""
    f = view.figures(cid, window)
    errs = view.errors(cid)
    return {"boltId": cid, "encodedBoltId": quote(cid, safe=""), **_common(view, cid, f),
            "executed": int(f.get("executed") or 0), "capacity": float_str(f.get("capacity")),
            "executeLatency": float_str(f.get("execute_latency_ms")),
            "processLatency": float_str(f.get("process_latency_ms")),
            **view.error_fields(errs[-1] if errs else None, truncate=True)}


def topology_page(view: TopologyView, window: str) -> dict:
    """``/api/v1/topology/:id``."""
    uptime = view.uptime_secs()
    # every task, squall's own (acker, checkpoint spout) too, as squall info counts them
    n_tasks = sum(len(c.get("tasks") or []) for c in view.components.values()) or \
        sum(view.num_tasks(c) for c in view.all_components())
    req = [_requested(s) for s in view.shape.values()]
    mem, cpu = sum(r["requestedMemOnHeap"] for r in req), sum(r["requestedCpu"] for r in req)
    info = view.info
    debug = info.get("debug")
    return {
        "id": view.id, "encodedId": quote(view.id, safe=""), "name": view.name, "owner": "", "user": "",
        "status": info["status"], "uptime": pretty_uptime(uptime), "uptimeSeconds": uptime,
        "tasksTotal": n_tasks, "executorsTotal": n_tasks,
        "workersTotal": info.get("num_workers") or len(info.get("workers") or []),
        "msgTimeout": int(view.conf.get("topology.message.timeout.secs") or 30),
        "window": window, "windowHint": window_hint(window), "schedulerDisplayResource": False,
        "replicationCount": (info.get("replication") or {}).get("count", 1), "debug": bool(debug),
        "samplingPct": round(100.0 * (debug or {}).get("rate", 0.0), 3),
        "assignedMemOnHeap": mem, "assignedMemOffHeap": 0.0, "assignedTotalMem": mem, "assignedCpu": cpu,
        "requestedMemOnHeap": mem, "requestedMemOffHeap": 0.0, "requestedTotalMem": mem, "requestedCpu": cpu,
        "topologyVersion": str(info.get("version")),
        "topologyStats": [_window_stats(view, w) for w in view.windows()],
        "workers": [worker_row(view, w) for w in info.get("workers") or []],
        "spouts": [spout_row(view, c, window) for c in view.spouts()],
        "bolts": [bolt_row(view, c, window) for c in view.bolts()],
        "chains": [list(c) for c in info.get("chains") or []],  # squall's: bolts fused with their upstream
        "autoscale": info.get("autoscale"),  # squall's: the autoscaler's mode and decisions, or None
        "rescale": info.get("rescale"),  # squall's: the last rescale (API.md, Rescaling), None before one
        "configuration": view.conf,
        "visualizationTable": [],
    }


# ---- topology/:id/component/:component ---------------------------------------------------------


def _per_stream(view: TopologyView, cid: str, window: str, direction: str) -> dict:
    """The live per-stream figures of ``cid`` (all time only: the history is per component)."""
    streams = (view.components.get(cid) or {}).get("streams") or {} if window == ALL_TIME else {}
    if direction == "outputs":
        return {r["stream"]: r for r in streams.get("outputs") or []}
    return {(r["component"], r["stream"]): r for r in streams.get("inputs") or []}


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _outputs(view: TopologyView, cid: str, f: dict, window: str = ALL_TIME) -> list[dict]:
    streams = sorted((view.shape.get(cid) or {}).get("streams") or {"default": []})
    if len(streams) == 1:  # the component's own figures, over any window
        return [{"stream": streams[0], "emitted": int(f.get("emitted") or 0),
                 "transferred": int(f.get("transferred") or 0),
                 "completeLatency": float_str(f.get("complete_latency_ms")),
                 "acked": int(f.get("acked") or 0), "failed": int(f.get("failed") or 0)}]
    # several: each stream's own counts (a spout's trees are not counted per stream)
    live = _per_stream(view, cid, window, "outputs")
    return [{"stream": s, "emitted": _int((live.get(s) or {}).get("emitted", 0 if live else None)),
             "transferred": _int((live.get(s) or {}).get("transferred", 0 if live else None)),
             "completeLatency": None, "acked": None, "failed": None} for s in streams]


def _inputs(view: TopologyView, cid: str, f: dict, window: str = ALL_TIME) -> list[dict]:
    inputs = (view.shape.get(cid) or {}).get("inputs") or []
    one = len(inputs) == 1
    live = _per_stream(view, cid, window, "inputs")
    out = []
    for i in inputs:
        row = {"component": i["component"], "encodedComponentId": quote(i["component"], safe=""),
               "stream": i["stream"], "grouping": i["grouping"]}
        if one:  # the component's own figures, over any window
            row.update(executeLatency=float_str(f.get("execute_latency_ms")),
                       processLatency=float_str(f.get("process_latency_ms")),
                       executed=int(f.get("executed") or 0), acked=int(f.get("acked") or 0),
                       failed=int(f.get("failed") or 0))
        else:  # estimated from the sampled tuples of each stream (squall.runtime.metrics)
            s = live.get((i["component"], i["stream"]))
            zero = 0 if live else None  # live figures but none sampled from this input: none seen
            row.update(executeLatency=float_str(s["execute_latency_ms"]) if s and s["execute_latency_ms"]
                       is not None else None,
                       processLatency=float_str(s["process_latency_ms"]) if s and s["process_latency_ms"]
                       is not None else None,
                       executed=_int(s["executed"]) if s else zero, acked=_int(s["acked"]) if s else zero,
                       failed=_int(s["failed"]) if s else zero)
        out.append(row)
    return out


def _executor(view: TopologyView, cid: str, task: int, figures: dict, spout: bool) -> dict:
    worker = view.by_task.get(task) or {}
    started = view.task_started.get(task)
    uptime = int(max(0.0, view.now - started) if started else worker.get("uptime_secs") or view.uptime_secs())
    row = {"id": f"[{task}-{task}]", "encodedId": quote(f"[{task}-{task}]", safe=""), "task": task,
           "host": worker.get("host") or "", "port": _port(worker), "worker": worker.get("worker"),
           "uptime": pretty_uptime(uptime), "uptimeSeconds": uptime,
           "workerLogLink": worker_log_link(view.name, worker or None),
           "emitted": int(figures.get("emitted") or 0), "transferred": int(figures.get("transferred") or 0),
           "acked": int(figures.get("acked") or 0), "failed": int(figures.get("failed") or 0)}
    if spout:
        row["completeLatency"] = float_str(figures.get("complete_latency_ms"))
    else:
        row.update(executed=int(figures.get("executed") or 0), capacity=float_str(figures.get("capacity")),
                   executeLatency=float_str(figures.get("execute_latency_ms")),
                   processLatency=float_str(figures.get("process_latency_ms")))
    return row


def component_page(view: TopologyView, cid: str, window: str) -> dict:
    """``/api/v1/topology/:id/component/:component``; ``KeyError`` if there is no such component."""
    if cid not in view.all_components():
        raise KeyError(cid)
    spout = view.kind(cid) == "spout"
    f = view.figures(cid, window)
    live = view.components.get(cid, {})
    n = view.num_tasks(cid)
    debug = view.info.get("debug") or {}
    sampled = bool(debug.get("rate")) and (not debug.get("components") or cid in debug["components"])
    out: dict[str, Any] = {
        "user": "", "id": cid, "encodedId": quote(cid, safe=""), "name": view.name,
        "executors": n, "tasks": n, "topologyId": view.id, "encodedTopologyId": quote(view.id, safe=""),
        "topologyStatus": view.info["status"], "window": window, "windowHint": window_hint(window),
        "componentType": "spout" if spout else "bolt", "debug": sampled,
        "samplingPct": round(100.0 * debug["rate"], 3) if sampled else 0.0,
        "eventLogLink": f"/api/v1/topologies/{quote(view.name)}/samples?component={quote(cid)}",
        "profilingAndDebuggingCapable": False, "profileActionEnabled": False,
        "profilerActive": [], "schedulerDisplayResource": False, **_requested(view.shape.get(cid)),
        "componentErrors": [
            {**{k: v for k, v in view.error_fields(e, truncate=False).items() if k != "lastError"},
             "error": error_text(e), "errorTime": int(e.get("time") or 0) * 1000,
             "task": e.get("task"), "message": e.get("message")}
            for e in reversed(view.errors(cid))],
        "outputStats": _outputs(view, cid, f, window),
        "executorStats": [_executor(view, cid, t, (live.get("by_task") or {}).get(t)
                                    or (live.get("by_task") or {}).get(str(t)) or {}, spout)
                          for t in view.tasks(cid)],
        "metrics": live.get("metrics"),
        # squall's: the chain this component runs fused in (head first), or None
        "chain": next((list(c) for c in view.info.get("chains") or [] if cid in c), None),
    }
    if spout:
        out["spoutSummary"] = [_spout_window(view, cid, w) for w in view.windows()]
    else:
        out["boltStats"] = [_bolt_window(view, cid, w) for w in view.windows()]
        out["inputStats"] = _inputs(view, cid, f, window)
    return out


def _spout_window(view: TopologyView, cid: str, window: str) -> dict:
    f = view.figures(cid, window)
    return {"windowPretty": window_hint(window), "window": window, "emitted": int(f.get("emitted") or 0),
            "transferred": int(f.get("transferred") or 0),
            "completeLatency": float_str(f.get("complete_latency_ms")),
            "acked": int(f.get("acked") or 0), "failed": int(f.get("failed") or 0)}


def _bolt_window(view: TopologyView, cid: str, window: str) -> dict:
    f = view.figures(cid, window)
    return {"windowPretty": window_hint(window), "window": window, "emitted": int(f.get("emitted") or 0),
            "transferred": int(f.get("transferred") or 0), "executed": int(f.get("executed") or 0),
            "executeLatency": float_str(f.get("execute_latency_ms")),
            "processLatency": float_str(f.get("process_latency_ms")),
            "capacity": float_str(f.get("capacity")),
            "acked": int(f.get("acked") or 0), "failed": int(f.get("failed") or 0)}


# ---- topology/:id/metrics and topology-workers/:id ---------------------------------------------


def topology_metrics(view: TopologyView, window: str) -> dict:
    """``/api/v1/topology/:id/metrics``: figures by stream (squall's are by component: see docs)."""
    def on(streams: list[str], value: Any) -> list[dict]:
        return [{"stream_id": s, "value": value} for s in streams]

    spouts, bolts = [], []
    for cid in view.spouts():
        f = view.figures(cid, window)
        out = sorted((view.shape.get(cid) or {}).get("streams") or {"default": []})[:1]
        spouts.append({"id": cid, "emitted": on(out, int(f.get("emitted") or 0)),
                       "transferred": on(out, int(f.get("transferred") or 0)),
                       "acked": on(out, int(f.get("acked") or 0)),
                       "failed": on(out, int(f.get("failed") or 0)),
                       "complete_ms_avg": on(out, float_str(f.get("complete_latency_ms")))})
    for cid in view.bolts():
        f = view.figures(cid, window)
        out = sorted((view.shape.get(cid) or {}).get("streams") or {"default": []})[:1]
        inputs = (view.shape.get(cid) or {}).get("inputs") or []

        def per_input(value: Any, inputs: list = inputs) -> list[dict]:
            return [{"component_id": i["component"], "stream_id": i["stream"], "value": value}
                    for i in inputs[:1]]
        bolts.append({"id": cid, "emitted": on(out, int(f.get("emitted") or 0)),
                      "transferred": on(out, int(f.get("transferred") or 0)),
                      "acked": per_input(int(f.get("acked") or 0)),
                      "failed": per_input(int(f.get("failed") or 0)),
                      "process_ms_avg": per_input(float_str(f.get("process_latency_ms"))),
                      "executed": per_input(int(f.get("executed") or 0)),
                      "executed_ms_avg": per_input(float_str(f.get("execute_latency_ms")))})
    return {"window": window, "window-hint": window_hint(window), "windowHint": window_hint(window),
            "spouts": spouts, "bolts": bolts}


def topology_workers(info: dict) -> dict:
    """``/api/v1/topology-workers/:id``."""
    return {"hostPortList": [{"host": w.get("host"), "port": _port(w), "worker": w.get("worker")}
                             for w in info.get("workers") or [] if w.get("host")],
            "logviewerPort": None}


# ---- cluster ----------------------------------------------------------------------------------


def slots_of(spark_master: str, cpu_count: int) -> int | None:
    """Worker slots a topology's Spark master offers: N of ``local[N]``; unknown elsewhere.

    >>> [slots_of(m, 2) for m in ("local[4]", "local[*]", "local[3,2]", "spark://h:7077")]
    [4, 2, 3, None]
    """
    if spark_master == "local":
        return 1
    if spark_master.startswith("local[") and spark_master.endswith("]"):
        n = spark_master[6:-1].split(",")[0].strip()
        return cpu_count if n == "*" else int(n) if n.isdigit() else None
    return None


def cluster_summary(infos: list[dict], nimbus: dict, cpu_count: int) -> dict:
    """``/api/v1/cluster/summary`` over the topologies' ``info``s (with ``spark_master``)."""
    hosts = {w.get("host") for i in infos for w in i.get("workers") or [] if w.get("host")}
    used = sum(len(i.get("workers") or []) for i in infos)
    total = 0
    for i in infos:
        slots = slots_of(i.get("spark_master") or "", cpu_count)
        total += max(slots if slots is not None else 0, len(i.get("workers") or []))
    tasks = sum(len(c.get("tasks") or []) for i in infos for c in (i.get("components") or {}).values())
    return {
        "stormVersion": __version__, "squallVersion": __version__,
        "supervisors": len(hosts), "topologies": len(infos), "slotsTotal": total, "slotsUsed": used,
        "slotsFree": max(0, total - used), "executorsTotal": tasks, "tasksTotal": tasks,
        "schedulerDisplayResource": False, "totalMem": 0.0, "totalCpu": 0.0, "availMem": 0.0,
        "availCpu": 0.0, "memAssignedPercentUtil": 0.0, "cpuAssignedPercentUtil": 0.0,
        "fragmentedMem": 0.0, "fragmentedCpu": 0.0,
        # squall's own
        "hosts": sorted(hosts), **nimbus,
    }


def supervisor_summary(infos: list[dict], now: float, cpu_count: int) -> dict:
    """``/api/v1/supervisor/summary``: one supervisor per host that runs workers."""
    by_host: dict[str, dict] = {}
    for i in infos:
        for w in i.get("workers") or []:
            host = w.get("host")
            if not host:
                continue
            s = by_host.setdefault(host, {"slotsUsed": 0, "uptimeSeconds": 0, "topologies": set()})
            s["slotsUsed"] += 1
            s["uptimeSeconds"] = max(s["uptimeSeconds"], int(w.get("uptime_secs") or 0))
            s["topologies"].add(i["name"])
    rows = []
    for host, s in sorted(by_host.items()):
        rows.append({"id": host, "host": host, "uptime": pretty_uptime(s["uptimeSeconds"]),
                     "uptimeSeconds": s["uptimeSeconds"], "slotsTotal": max(cpu_count, s["slotsUsed"]),
                     "slotsUsed": s["slotsUsed"], "slotsFree": max(0, cpu_count - s["slotsUsed"]),
                     "totalMem": 0.0, "totalCpu": 0.0, "usedMem": 0.0, "usedCpu": 0.0,
                     "version": __version__, "topologies": sorted(s["topologies"])})
    return {"supervisors": rows, "schedulerDisplayResource": False}
