"""The OpenAPI 3 document of Nimbus's REST API, served at ``GET /api/v1/openapi.json``."""

from __future__ import annotations

from typing import Any

from squall._version import __version__
from squall.nimbus.openapi_ui import ui_paths, ui_schemas

_ERROR = {"description": "refused or failed", "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/Error"}}}}


def _ok(schema: str, text: str) -> dict:
    return {"description": text, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _op(summary: str, ok: dict, *, auth: bool = False, body: str | None = None,
        errors: tuple[str, ...] = ()) -> dict:
    op: dict[str, Any] = {"summary": summary, "responses": {"200": ok}}
    for code in errors:
        op["responses"][code] = _ERROR
    if auth:
        op["security"] = [{"token": []}]
        op["responses"].setdefault("401", _ERROR)
        op["responses"].setdefault("403", _ERROR)
        op["responses"].setdefault("503", _ERROR)
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{body}"}}}}
    return op


_NAME = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]


def _paths() -> dict:
    summary = _ok("TopologySummary", "the topology after the operation")
    t = "/topologies/{name}"
    return {
        "/health": {"get": _op("this Nimbus and who leads", _ok("Health", "health"))},
        "/openapi.json": {"get": _op("this document", {"description": "OpenAPI 3 document"})},
        "/cluster": {"get": _op("Nimbus, store, Spark master", {"description": "cluster summary"})},
        "/topologies": {
            "get": _op("list the topologies", _ok("TopologyList", "every topology")),
            "post": _op("submit a topology; returns once its workers run", summary, auth=True,
                        body="Submission", errors=("400", "409", "500")),
        },
        t: {"parameters": _NAME,
            "get": _op("topology info: components, workers, errors (error texts only with the "
                       "token)", _ok("TopologyInfo", "info"), errors=("404",))},
        f"{t}/conf": {"parameters": _NAME,
                      "get": _op("the effective configuration, each value with its source (default, "
                                 "cluster file, topology, rebalance, component)",
                                 {"description": "configuration"}, errors=("404",))},
        f"{t}/errors": {"parameters": _NAME,
                        "get": _op("errors reported by components (their tracebacks hold "
                                   "tuple values)", {"description": "errors"}, auth=True,
                                   errors=("404",))},
        f"{t}/activate": {"parameters": _NAME, "post": _op(
            "activate the spouts", summary, auth=True, errors=("404", "409"))},
        f"{t}/deactivate": {"parameters": _NAME, "post": _op(
            "deactivate the spouts (bolts keep draining)", summary, auth=True, errors=("404", "409"))},
        f"{t}/rebalance": {"parameters": _NAME, "post": _op(
            "new worker count and/or parallelism", summary, auth=True, body="Rebalance",
            errors=("400", "404", "409"))},
        f"{t}/upgrade": {"parameters": _NAME, "post": _op(
            "hot deploy (no 'gray', no topology.upgrade.* keys), gray upgrade of some workers, or "
            "(no code while a gray upgrade is open) its next batch", summary, auth=True,
            body="Upgrade", errors=("400", "404", "409", "500"))},
        f"{t}/complete-upgrade": {"parameters": _NAME, "post": _op(
            "move the remaining workers to the new version", summary, auth=True, errors=("404", "409"))},
        f"{t}/rollback": {"parameters": _NAME, "post": _op(
            "move the upgraded workers back", summary, auth=True, errors=("404", "409"))},
        f"{t}/kill": {"parameters": _NAME, "post": _op(
            "deactivate, wait, stop and remove the topology", summary, auth=True, body="Kill",
            errors=("404", "409"))},
        "/blobs/{topology_id}/{version}/{file}": {
            "parameters": [{"name": n, "in": "path", "required": True, "schema": {"type": k}} for n, k in
                           (("topology_id", "string"), ("version", "integer"), ("file", "string"))],
            "get": _op("one file (code.zip, topology.pkl or conf.json) of a version this Nimbus holds, "
                       "for another Nimbus's replica (checked there against the version's digest)",
                       {"description": "the file's bytes",
                        "content": {"application/octet-stream": {"schema": {"type": "string",
                                                                            "format": "binary"}}}},
                       auth=True, errors=("404",))},
    }


def _schemas() -> dict:
    s, i, n, b = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
    upload = {"conf": {"type": "object", "description": "the topology's configuration"},
              "topology": {**s, "format": "byte", "description": "cloudpickle of the StormTopology"},
              "code": {**s, "format": "byte", "description": "zip of the user's modules"}}
    return {
        "Error": {"type": "object", "required": ["error", "code"], "properties": {
            "error": s, "code": s, "leader": {**s, "description": "the leader (503 of a standby)"}}},
        "Health": {"type": "object", "properties": {"url": s, "leader": b, "leader_url": s, "version": s}},
        "Submission": {"type": "object", "required": ["name", "topology", "code"],
                       "properties": {"name": s, **upload}},
        "Upgrade": {"type": "object", "description": "topology and code are required except for the "
                    "next batch of an open gray upgrade", "properties": {
            **upload, "wait_secs": n,
            "gray": {"type": "object", "description": "absent for a hot deploy", "properties": {
                "workers": {"type": "array", "items": s, "description": "indices or host:port"},
                "component": s, "worker_num": i}}}},
        "Rebalance": {"type": "object", "properties": {
            "workers": i, "parallelism": {"type": "object", "additionalProperties": i}, "wait_secs": n}},
        "Kill": {"type": "object", "properties": {"wait_secs": n}},
        "TopologySummary": {"type": "object", "properties": {
            "name": s, "id": s, "version": i, "num_workers": i, "num_tasks": i, "uptime_secs": n,
            "status": {"type": "string", "enum": ["ACTIVE", "INACTIVE", "REBALANCING", "UPGRADING",
                                                  "KILLED"]},
            "master": s, "emitted": i, "acked": i, "failed": i, "num_errors": i, "spark_master": s,
            "upgrade": {"type": "object", "nullable": True, "properties": {
                "from": i, "to": i, "workers": {"type": "array", "items": i},
                "state": {"type": "string", "enum": ["IN_PROGRESS", "BATCH_FINISHED", "EXPIRED"]}}}}},
        "TopologyList": {"type": "object", "properties": {
            "topologies": {"type": "array", "items": {"$ref": "#/components/schemas/TopologySummary"}}}},
        "TopologyInfo": {"allOf": [{"$ref": "#/components/schemas/TopologySummary"}, {
            "type": "object", "properties": {
                "components": {"type": "object"}, "workers": {"type": "array", "items": {"type": "object"}},
                "chains": {"type": "array", "items": {"type": "array", "items": s}, "description": "bolts "
                           "fused with their upstream, heads first (squall.chaining)"},
                "errors": {"type": "array", "items": {"type": "object"}}, "versions": {"type": "array"},
                "upgrade": {"type": "object", "nullable": True, "description": "the open gray upgrade: "
                            "state, from, to, workers, old_workers, since, batches, expires_at"},
                "last_upgrade": {"type": "object", "nullable": True},
                "tasks": {"type": "array", "items": {"type": "object"}, "description": "per task: "
                          "worker, last_heartbeat, last_progress, idle_secs and counters"}}}]},
    }


def openapi() -> dict:
    """The whole document."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "squall Nimbus", "version": __version__,
                 "description": "Submit and manage squall topologies. POST needs the Nimbus token."},
        "servers": [{"url": "/api/v1"}],
        "paths": {**_paths(), **ui_paths()},
        "components": {"schemas": {**_schemas(), **ui_schemas()}, "securitySchemes": {
            "token": {"type": "http", "scheme": "bearer"}}},
    }
