"""Nimbus's side of a REST or ``/metrics`` request, on a master's ``info`` (``benchmarks.scale``).

Each of ``/api/v1/topology/:id``, its component page and ``/metrics`` asks the topology
master for its ``info`` (JSON over the control endpoint; the topology page without per-task
detail, ``/info/components``), then builds the page from it. This times those steps with
Nimbus's own functions, without the HTTP servers and the store reads around them (a few
small records).
"""

from __future__ import annotations

import json
import time
from typing import Any

from squall.nimbus.history import ALL_TIME, MetricHistory
from squall.nimbus.prometheus import render
from squall.nimbus.stormapi import TopologyView, component_page, topology_page
from squall.nimbus.structure import redact, structure


def nimbus_pages(info: dict, brief: dict, topology: Any, conf: dict) -> dict[str, float]:
    """Seconds and MB of each page's Nimbus-side work, from the master's ``info`` (dumped here).

    ``brief`` is the info without per-task detail (``/info/components``), which the topology
    page asks for; the component page and ``/metrics`` ask for the whole.
    """
    out: dict[str, float] = {}
    t = time.monotonic()
    wire = json.dumps(info)  # the master's control endpoint answers in JSON
    out["info_dumps_s"] = time.monotonic() - t
    t = time.monotonic()
    brief_wire = json.dumps(brief)
    out["components_dumps_s"] = time.monotonic() - t
    shape = structure(topology)
    for key, page, body in (("rest_topology", lambda v: topology_page(v, ALL_TIME), brief_wire),
                            ("rest_component", lambda v: component_page(v, "spout", ALL_TIME), wire)):
        t = time.monotonic()
        got = json.loads(body)
        got.update(id=f"{got['name']}-1-1", master_uptime_secs=got["uptime_secs"])  # what Nimbus adds
        view = TopologyView(got, shape, redact(conf), MetricHistory(), time.time())
        text = json.dumps(page(view))
        out[f"{key}_nimbus_s"] = time.monotonic() - t
        out[f"{key}_mb"] = len(text) / 1e6
    t = time.monotonic()
    got = json.loads(wire)
    got["kinds"] = {c: s["kind"] for c, s in shape.items()}
    text = render([got], {"leader": True})
    out["metrics_nimbus_s"] = time.monotonic() - t
    out["metrics_mb"] = len(text) / 1e6
    return out
