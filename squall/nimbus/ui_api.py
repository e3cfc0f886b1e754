"""The routes behind the web UI: Storm UI's REST API, squall's history and graph, ``/metrics``.

Storm's read endpoints (``cluster/summary``, ``nimbus/summary``, ``supervisor/summary``,
``topology/summary``, ``topology/:id``, ``topology/:id/component/:component``,
``topology/:id/metrics``, ``topology-workers/:id``) answer in Storm's shapes
(``squall.nimbus.stormapi``); ``:id`` is a topology's id or its name. Storm's operations
(``topology/:id/activate``, ``deactivate``, ``rebalance/:wait``, ``kill/:wait``) need the
Nimbus token, as squall's own do. Reads never show the topology's secret, the token or a
configuration value whose key names a secret.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from squall._version import __version__
from squall.nimbus.errors import InvalidRequest, NimbusError, NotFound
from squall.nimbus.history import ALL_TIME, WINDOWS
from squall.nimbus.logs import read_log
from squall.nimbus.observer import Observer
from squall.nimbus.prometheus import render
from squall.nimbus.stormapi import (
    TopologyView,
    cluster_summary,
    component_page,
    parse_window,
    pretty_uptime,
    supervisor_summary,
    topology_metrics,
    topology_page,
    topology_summary_row,
    topology_workers,
)
from squall.nimbus.structure import graph
from squall.nimbus.upgrades import Nimbus
from squall.nimbus.webui import Raw
from squall.runtime import clock

ID = r"(?P<id>[^/]+)"
COMPONENT = r"(?P<component>[^/]+)"
WAIT = r"(?P<wait>[0-9]+(\.[0-9]+)?)"
ACTION = r"(?P<action>enable|disable)"
PCT = r"(?P<pct>[0-9]+(\.[0-9]+)?)"
NAME = r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]{0,127})"

Handler = Callable[..., Any]


def rss_mb(pid: Any) -> float | None:
    """Resident memory of process ``pid`` of this host in MB (Linux ``/proc``), None if unknown."""
    try:
        with open(f"/proc/{int(pid)}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024.0, 1)
    except (OSError, ValueError, TypeError, IndexError):
        return None
    return None


def _window(query: dict) -> str:
    try:
        return parse_window(query.get("window"))
    except ValueError as e:
        raise InvalidRequest(str(e)) from None


class UiApi:
    """Handlers of the module docstring, over one ``Nimbus`` and its ``Observer``."""

    def __init__(self, nimbus: Nimbus, observer: Observer) -> None:
        self.nimbus = nimbus
        self.observer = observer

    def routes(self) -> list[tuple[str, str, bool, Handler]]:
        """(method, path under /api/v1, needs the token, handler(query, body, **params))."""
        t = f"/topology/{ID}"
        return [
            ("GET", "/cluster/summary", False, lambda q, b: self.cluster_summary()),
            ("GET", "/cluster/configuration", False, lambda q, b: self.cluster_configuration()),
            ("GET", "/nimbus/summary", False, lambda q, b: self.nimbus_summary()),
            ("GET", "/supervisor/summary", False, lambda q, b: self.supervisor_summary()),
            ("GET", "/topology/summary", False, lambda q, b: self.topology_summary()),
            # components and workers only: per-task figures are the component page's
            ("GET", t, False, lambda q, b, id: topology_page(self.view(id, per_task=False), _window(q))),
            ("GET", f"{t}/metrics", False,
             lambda q, b, id: topology_metrics(self.view(id, per_task=False), _window(q))),
            ("GET", f"{t}/component/{COMPONENT}", False,
             lambda q, b, id, component: self.component(id, unquote(component), _window(q))),
            ("GET", f"/topology-workers/{ID}", False, lambda q, b, id: topology_workers(self.info(id))),
            ("POST", f"{t}/activate", True, lambda q, b, id: self.operate(id, "activate", b)),
            ("POST", f"{t}/deactivate", True, lambda q, b, id: self.operate(id, "deactivate", b)),
            ("POST", f"{t}/rebalance/{WAIT}", True,
             lambda q, b, id, wait: self.operate(id, "rebalance", b, float(wait))),
            ("POST", f"{t}/kill/{WAIT}", True,
             lambda q, b, id, wait: self.operate(id, "kill", b, float(wait))),
            ("POST", f"{t}/debug/{ACTION}/{PCT}", True,
             lambda q, b, id, action, pct: self.storm_debug(id, None, action, pct)),
            ("POST", f"{t}/component/{COMPONENT}/debug/{ACTION}/{PCT}", True,
             lambda q, b, id, component, action, pct: self.storm_debug(id, unquote(component), action, pct)),
            ("POST", f"/topologies/{NAME}/debug", True, lambda q, b, name: self.debug(name, b)),
            ("GET", f"/topologies/{NAME}/samples", True, lambda q, b, name: self.samples(name, q)),
            ("GET", f"/topologies/{NAME}/history", False, lambda q, b, name: self.history(name, q)),
            ("GET", f"/topologies/{NAME}/graph", False, lambda q, b, name: self.graph(name)),
            ("GET", f"/topologies/{NAME}/logs", True, lambda q, b, name: self.logs(name, q)),
        ]

    # ---- helpers -----------------------------------------------------------------------

    def info(self, key: str, texts: bool = True, per_task: bool = True) -> dict:
        """Nimbus's ``info`` of the topology whose id or name is ``key``, with workers' memory."""
        rec = self.observer.find(unquote(key))
        info = self.nimbus.info(rec["name"], texts=texts, per_task=per_task)
        for w in info.get("workers") or []:  # only the workers on this host can be measured here
            if w.get("pid") and self._here(w.get("host")) and w.get("memory_mb") is None:
                w["memory_mb"] = rss_mb(w["pid"])
        return info

    def _here(self, host: Any) -> bool:
        """Whether a worker's host is this machine (its name, or a loopback address)."""
        if not isinstance(host, str):
            return False
        if host in (self.nimbus.host, "localhost"):
            return True
        try:
            return socket.gethostbyname(host).startswith("127.")
        except OSError:
            return False

    def view(self, key: str, per_task: bool = True) -> TopologyView:
        """Everything about the topology whose id or name is ``key``, for the Storm shapes.

        ``per_task=False``: without each task's figures (``Nimbus.info``), for pages of components.
        """
        rec = self.observer.find(unquote(key))
        info = self.info(rec["id"], per_task=per_task)
        shape, conf = self.observer.shape(rec)
        info["debug"] = rec.get("debug")
        history = self.observer.history(rec["name"], rec["id"])
        return TopologyView(info, shape, conf, history, clock.time_ms() / 1000.0)

    def _infos(self) -> list[dict]:
        out = []
        for summary in self.nimbus.list_topologies():
            try:
                info = self.info(summary["name"], texts=False)  # counts only: no error texts
            except NotFound:
                continue  # killed meanwhile
            rec = self.observer.find(summary["name"])
            shape, _ = self.observer.shape(rec)
            info["kinds"] = {c: s["kind"] for c, s in shape.items()}
            out.append(info)
        return out

    # ---- cluster -----------------------------------------------------------------------

    def _nimbus_fields(self) -> dict:
        n = self.nimbus
        leader = n.election.leader() or {}
        standbys = [e["url"] for e in self.observer.nimbuses() if e["status"] == "Not a Leader"]
        return {"nimbusUrl": n.config.url, "leader": n.election.is_leader(), "leaderUrl": leader.get("url"),
                "standbys": standbys, "store": n.config.store, "sparkMaster": n.config.spark_master,
                "nimbusUptimeSeconds": int(clock.time_ms() / 1000.0 - n.started)}

    def cluster_summary(self) -> dict:
        """``/api/v1/cluster/summary``."""
        return cluster_summary(self._infos(), self._nimbus_fields(), os.cpu_count() or 1)

    def cluster_configuration(self) -> dict:
        """Nimbus's settings in Storm's key style (no secrets: the token file's path only)."""
        c = self.nimbus.config
        return {"nimbus.host": c.host, "nimbus.thrift.port": c.port, "nimbus.url": c.url,
                "nimbus.store": c.store, "nimbus.blob.dir": str(c.blob_dir), "nimbus.log.dir": str(c.log_dir),
                "nimbus.token.file": str(c.token_file), "squall.spark.master": c.spark_master,
                "nimbus.submit.timeout.secs": c.submit_timeout_secs,
                "nimbus.master.timeout.secs": c.master_timeout_secs,
                "nimbus.kill.timeout.secs": c.kill_timeout_secs,
                "topology.max.task.parallelism": c.max_task_parallelism,
                "nimbus.zookeeper.session.timeout.secs": c.zk_session_timeout_secs}

    def nimbus_summary(self) -> dict:
        """``/api/v1/nimbus/summary``: every Nimbus registered in the store."""
        now = clock.time_ms() / 1000.0
        rows = []
        for e in self.observer.nimbuses():
            up = max(0, int(now - float(e.get("started") or now)))
            rows.append({"host": e.get("host"), "port": e.get("port"), "status": e["status"],
                         "nimbusUpTime": pretty_uptime(up), "nimbusUpTimeSeconds": str(up),
                         "nimbusLogLink": "", "version": self.nimbus_version(), "url": e.get("url"),
                         "pid": e.get("pid")})
        return {"nimbuses": rows}

    @staticmethod
    def nimbus_version() -> str:
        """Squall's version."""
        return __version__

    def supervisor_summary(self) -> dict:
        """``/api/v1/supervisor/summary``."""
        return supervisor_summary(self._infos(), clock.time_ms() / 1000.0, os.cpu_count() or 1)

    def topology_summary(self) -> dict:
        """``/api/v1/topology/summary``."""
        rows = []
        for summary in self.nimbus.list_topologies():
            try:
                shape, _ = self.observer.shape(self.observer.find(summary["name"]))
            except NotFound:
                continue
            rows.append(topology_summary_row(summary, shape))
        return {"topologies": rows, "schedulerDisplayResource": False}

    # ---- topology ----------------------------------------------------------------------

    def component(self, key: str, component: str, window: str) -> dict:
        """``/api/v1/topology/:id/component/:component``."""
        view = self.view(key)
        try:
            return component_page(view, component, window)
        except KeyError:
            known = ", ".join(view.all_components()) or "none"
            raise NotFound(f"topology {view.name!r} has no component {component!r}; "
                           f"components: {known}") from None

    def operate(self, key: str, op: str, body: dict, wait: float | None = None) -> dict:
        """Storm's POST operations, answered as Storm answers them."""
        rec = self.observer.find(unquote(key))
        name = rec["name"]
        if op == "activate":
            self.nimbus.set_active(name, True)
        elif op == "deactivate":
            self.nimbus.set_active(name, False)
        elif op == "rebalance":
            self.nimbus.rebalance(name, self._rebalance_body(body, wait or 0.0))
        else:
            self.nimbus.kill(name, wait)
        return {"topologyOperation": op, "topologyId": rec["id"], "status": "success"}

    @staticmethod
    def _rebalance_body(body: dict, wait: float) -> dict:
        options = body.get("rebalanceOptions") or {}
        if not isinstance(options, dict):
            raise InvalidRequest("rebalanceOptions must be an object with numWorkers and/or executors")
        out: dict[str, Any] = {"wait_secs": wait}
        if options.get("numWorkers") is not None:
            out["workers"] = _as_int(options["numWorkers"], "rebalanceOptions.numWorkers")
        executors = options.get("executors") or {}
        if not isinstance(executors, dict):
            raise InvalidRequest("rebalanceOptions.executors must map components to counts")
        out["parallelism"] = {c: _as_int(n, f"rebalanceOptions.executors.{c}") for c, n in executors.items()}
        return out

    # ---- tuple sampling (Storm's event logger) --------------------------------------------

    def storm_debug(self, key: str, component: str | None, action: str, pct: str) -> dict:
        """Storm's ``debug/:action/:spct`` routes: sampling percentage ``pct`` on or off."""
        rec = self.observer.find(unquote(key))
        rate = float(pct) / 100.0 if action == "enable" else 0.0
        self.set_debug(rec["name"], rate, component)
        return {"topologyOperation": "debug", "topologyId": rec["id"], "status": "success"}

    def debug(self, name: str, body: dict) -> dict:
        """Sample ``sample`` (a fraction; 0 turns it off) of the tuples ``component`` emits, or all."""
        sample = body.get("sample")
        if isinstance(sample, bool) or not isinstance(sample, (int, float)):
            raise InvalidRequest(f"debug needs 'sample', a fraction of the tuples from 0 to 1, "
                                 f"got {sample!r}")
        component = body.get("component")
        if component is not None and not isinstance(component, str):
            raise InvalidRequest(f"debug: 'component' must be a component's id, got {component!r}")
        return {"name": name, "debug": self.set_debug(name, float(sample), component)}

    def set_debug(self, name: str, rate: float, component: str | None) -> dict | None:
        """Turn sampling on (``rate`` in (0, 1]) or off (0) for ``name``; recorded in its record."""
        if not 0.0 <= rate <= 1.0:
            raise InvalidRequest(f"debug: the sampling rate must be between 0 and 1 (0-100%), got {rate}")
        self.nimbus.require_leader()
        with self.nimbus.operation(name, "debug"):
            rec = self.nimbus.record(name)
            if component is not None:
                shape, _ = self.observer.shape(rec)
                if component not in shape:
                    raise NotFound(f"topology {name!r} has no component {component!r}; "
                                   f"components: {', '.join(sorted(shape))}")
            components = [component] if component is not None and rate > 0 else None
            self.nimbus.control(rec, "POST", "/debug", {"rate": rate, "components": components})
            setting = {"rate": rate, "components": components} if rate > 0 else None
            self.nimbus.update(name, debug=setting)
            return setting

    def samples(self, name: str, query: dict) -> dict:
        """The tuples sampled lately (numbered: ``since`` returns the newer ones only)."""
        rec = self.observer.find(name)
        since = query.get("since") or "0"
        if not re.fullmatch(r"[0-9]+", since):
            raise InvalidRequest(f"since must be a sample number, got {since!r}")
        live = self.nimbus.control(rec, "POST", "/samples", {"since": int(since)}, timeout=10.0)
        samples = live.get("samples") or []
        if query.get("component"):
            samples = [s for s in samples if s.get("component") == query["component"]]
        last = max([int(since)] + [int(s.get("seq") or 0) for s in live.get("samples") or []])
        return {"name": name, "debug": rec.get("debug"), "samples": samples, "last": last}

    def history(self, name: str, query: dict) -> dict:
        """Chart series of ``name`` over ``window`` seconds (600 by default)."""
        rec = self.observer.find(name)
        raw = query.get("window") or "600"
        if raw == ALL_TIME:
            raw = str(WINDOWS[-1] * 30)
        if not raw.isdigit() or int(raw) <= 0:
            raise InvalidRequest(f"window must be a number of seconds, got {raw!r}")
        history = self.observer.history(name, rec["id"])
        comps = [query["component"]] if query.get("component") else None
        out = history.series(int(raw), clock.time_ms() / 1000.0, comps)
        shape, _ = self.observer.shape(rec)
        out.update(name=name, id=rec["id"], kinds={c: s["kind"] for c, s in shape.items()})
        return out

    def graph(self, name: str) -> dict:
        """Nodes and edges of ``name`` with its live figures."""
        rec = self.observer.find(name)
        shape, _ = self.observer.shape(rec)
        components: dict = {}
        try:
            components = self.nimbus.info(name, per_task=False).get("components") or {}
        except NimbusError:
            pass
        return {"name": name, "id": rec["id"], **graph(shape, components)}

    def logs(self, name: str, query: dict) -> dict:
        """Whole lines of the topology's log (a worker's only with ``worker``), from ``offset``."""
        rec = self.observer.find(name)
        path = (rec.get("launcher") or {}).get("log")
        if not path or not os.path.isfile(path):
            raise NotFound(f"topology {name!r} has no log on this Nimbus's host")
        offset = query.get("offset")
        if offset is not None and not re.fullmatch(r"[0-9]+", offset):
            raise InvalidRequest(f"offset must be a byte offset, got {offset!r}")
        pid = None
        worker = query.get("worker")
        if worker is not None:  # in local mode the workers log to the master's stderr
            if not re.fullmatch(r"[0-9]+", worker):
                raise InvalidRequest(f"worker must be a worker number, got {worker!r}")
            workers = {str(w.get("worker")): w
                       for w in self.nimbus.info(name, per_task=False).get("workers") or []}
            if worker not in workers:
                raise NotFound(f"topology {name!r} has no worker {worker}; workers: {', '.join(workers)}")
            pid = workers[worker].get("pid")
        out = read_log(path, int(offset) if offset is not None else None, pid)
        return {"name": name, "worker": int(worker) if worker is not None else None, **out}

    def metrics_page(self) -> Raw:
        """``/metrics`` in Prometheus's text format."""
        text = render(self._infos(), {"leader": self.nimbus.election.is_leader()})
        return Raw(text.encode(), "text/plain; version=0.0.4; charset=utf-8")


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequest(f"{what} must be a positive integer, got {value!r}")
    return value
