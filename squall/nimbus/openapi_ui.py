"""The UI's part of the OpenAPI document: Storm UI's REST API, history, graph, logs, /metrics."""

from __future__ import annotations

from typing import Any

_S, _I, _N, _B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
_ID = {"name": "id", "in": "path", "required": True, "description": "the topology's id or name",
       "schema": _S}
_NAME = {"name": "name", "in": "path", "required": True, "schema": _S}
_WINDOW = {"name": "window", "in": "query", "required": False, "schema": _S,
           "description": "seconds (600, 10800, 86400) or :all-time (the default)"}
_ERR = {"description": "refused or failed", "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/Error"}}}}


def _get(summary: str, schema: str | None, *params: dict, auth: bool = False) -> dict:
    content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}} if schema \
        else {"application/json": {"schema": {"type": "object"}}}
    op: dict[str, Any] = {"summary": summary, "parameters": list(params),
                          "responses": {"200": {"description": summary, "content": content},
                                        "400": _ERR, "404": _ERR}}
    if auth:
        op["security"] = [{"token": []}]
        op["responses"].update({"401": _ERR, "403": _ERR})
    return {"get": op}


def _post(summary: str, *params: dict, body: str | None = None) -> dict:
    op: dict[str, Any] = {"summary": summary, "parameters": list(params), "security": [{"token": []}],
                          "responses": {"200": {"description": "done", "content": {"application/json": {
                              "schema": {"$ref": "#/components/schemas/StormOperation"}}}},
                              "400": _ERR, "401": _ERR, "403": _ERR, "404": _ERR, "409": _ERR, "503": _ERR}}
    if body:
        op["requestBody"] = {"required": False, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{body}"}}}}
    return {"post": op}


def ui_paths() -> dict:
    """Paths relative to ``/api/v1``, plus ``/metrics`` (with a server of its own)."""
    wait = {"name": "wait", "in": "path", "required": True, "schema": _N, "description": "seconds"}
    component = {"name": "component", "in": "path", "required": True, "schema": _S}
    action = {"name": "action", "in": "path", "required": True, "schema": {"type": "string",
                                                                         "enum": ["enable", "disable"]}}
    pct = {"name": "pct", "in": "path", "required": True, "schema": _N, "description": "percent"}
    t = "/topology/{id}"
    return {
        "/cluster/summary": _get("Storm UI: cluster summary (slots are Spark cores)",
                                 "StormClusterSummary"),
        "/cluster/configuration": _get("Nimbus's settings (no secrets)", None),
        "/nimbus/summary": _get("Storm UI: every Nimbus (Leader, Not a Leader, Dead)", None),
        "/supervisor/summary": _get("Storm UI: hosts that run workers", None),
        "/topology/summary": _get("Storm UI: every topology", "StormTopologyList"),
        t: _get("Storm UI: one topology, its spouts, bolts, workers and stats per window", "StormTopology",
                _ID, _WINDOW),
        f"{t}/metrics": _get("Storm UI: figures by stream (squall's are by component)", None, _ID, _WINDOW),
        f"{t}/component/{{component}}": _get("Storm UI: one component, its tasks and errors", None, _ID,
                                             component, _WINDOW),
        "/topology-workers/{id}": _get("Storm UI: the workers' hosts and ports", None, _ID),
        f"{t}/activate": _post("Storm UI: activate the spouts", _ID),
        f"{t}/deactivate": _post("Storm UI: deactivate the spouts", _ID),
        f"{t}/rebalance/{{wait}}": _post("Storm UI: rebalance after waiting", _ID, wait,
                                         body="StormRebalance"),
        f"{t}/kill/{{wait}}": _post("Storm UI: kill after waiting", _ID, wait),
        f"{t}/debug/{{action}}/{{pct}}": _post("Storm UI: sample pct% of every component's tuples, or stop",
                                               _ID, action, pct),
        f"{t}/component/{{component}}/debug/{{action}}/{{pct}}": _post(
            "Storm UI: sample pct% of one component's tuples, or stop", _ID, component, action, pct),
        "/topologies/{name}/debug": {"post": {
            "summary": "sample a share of the tuples emitted (0 turns it off)", "parameters": [_NAME],
            "security": [{"token": []}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["sample"],
                "properties": {"sample": {**_N, "description": "0 to 1"}, "component": _S}}}}},
            "responses": {"200": {"description": "the sampling now", "content": {"application/json": {
                "schema": {"type": "object"}}}}, "400": _ERR, "401": _ERR, "403": _ERR, "404": _ERR}}},
        "/topologies/{name}/samples": _get(
            "the tuples sampled lately (needs the token)", "Samples", _NAME,
            {"name": "since", "in": "query", "schema": _I},
            {"name": "component", "in": "query", "schema": _S},
            auth=True),
        "/topologies/{name}/history": _get(
            "metric history for charts: one point per bucket", "History", _NAME,
            {"name": "window", "in": "query", "schema": _I, "description": "seconds, 600 by default"},
            {"name": "component", "in": "query", "schema": _S}),
        "/topologies/{name}/graph": _get("the topology's graph: nodes and edges", "Graph", _NAME),
        "/topologies/{name}/logs": _get(
            "whole lines of the topology's log (needs the token)", "Log", _NAME,
            {"name": "worker", "in": "query", "schema": _I}, {"name": "offset", "in": "query", "schema": _I},
            auth=True),
        "/metrics": {"servers": [{"url": "/"}], "get": {
            "summary": "Prometheus text exposition format (series in docs/ui.md)",
            "responses": {"200": {"description": "metrics", "content": {"text/plain": {"schema": _S}}}}}},
    }


def ui_schemas() -> dict:
    """Schemas of the UI's answers (Storm's field names)."""
    window_stats = {"type": "object", "properties": {
        **{k: _S for k in ("windowPretty", "window", "completeLatency")},
        **{k: _I for k in ("emitted", "transferred", "acked", "failed")}}}
    error_fields = {"lastError": _S, "errorHost": _S, "errorPort": {**_I, "nullable": True},
                    "errorTime": {**_I, "nullable": True}, "errorLapsedSecs": {**_I, "nullable": True},
                    "errorWorkerLogLink": _S}
    common = {k: _I for k in ("executors", "tasks", "emitted", "transferred", "acked", "failed")}
    return {
        "StormOperation": {"type": "object", "properties": {"topologyOperation": _S, "topologyId": _S,
                                                            "status": _S}},
        "StormRebalance": {"type": "object", "properties": {"rebalanceOptions": {
            "type": "object", "properties": {
                "numWorkers": _I, "executors": {"type": "object", "additionalProperties": _I}}}}},
        "StormClusterSummary": {"type": "object", "properties": {
            "stormVersion": _S, **{k: _I for k in ("supervisors", "topologies", "slotsTotal", "slotsUsed",
                                                    "slotsFree", "executorsTotal", "tasksTotal")},
            "schedulerDisplayResource": _B}},
        "StormTopologyList": {"type": "object", "properties": {"topologies": {"type": "array", "items": {
            "type": "object", "properties": {
                "id": _S, "name": _S, "status": _S, "uptime": _S, "uptimeSeconds": _I, "tasksTotal": _I,
                "workersTotal": _I, "executorsTotal": _I, "replicationCount": _I}}}}},
        "StormTopology": {"type": "object", "properties": {
            "id": _S, "name": _S, "status": _S, "uptime": _S, "uptimeSeconds": _I, "tasksTotal": _I,
            "workersTotal": _I, "executorsTotal": _I, "msgTimeout": _I, "window": _S, "windowHint": _S,
            "topologyStats": {"type": "array", "items": window_stats},
            "spouts": {"type": "array", "items": {"type": "object", "properties": {
                "spoutId": _S, "completeLatency": _S, **common, **error_fields}}},
            "bolts": {"type": "array", "items": {"type": "object", "properties": {
                "boltId": _S, "capacity": _S, "executeLatency": _S, "processLatency": _S, "executed": _I,
                **common, **error_fields}}},
            "workers": {"type": "array", "items": {"type": "object"}},
            "configuration": {"type": "object", "description":
                              "secrets hidden by key and by value; without the token, paths too"}}},
        "History": {"type": "object", "properties": {
            "window": _I, "resolution": _I, "kinds": {"type": "object"},
            "points": {"type": "array", "items": {"type": "object", "properties": {
                "time": _N, "components": {"type": "object"}}}}}},
        "Graph": {"type": "object", "properties": {
            "nodes": {"type": "array", "items": {"type": "object", "properties": {
                "id": _S, "kind": _S, "column": _I, "row": _I, "parallelism": _I, "capacity": _N}}},
            "edges": {"type": "array", "items": {"type": "object", "properties": {
                "source": _S, "target": _S, "stream": _S, "grouping": _S, "tuples": _I}}}}},
        "Log": {"type": "object", "properties": {"text": _S, "offset": _I, "size": _I}},
        "Samples": {"type": "object", "properties": {
            "debug": {"type": "object", "nullable": True}, "last": _I,
            "samples": {"type": "array", "items": {"type": "object", "properties": {
                "seq": _I, "component": _S, "stream": _S, "task": _I,
                "worker": _I, "values": {"type": "array"},
                "time": _N}}}}},
    }
