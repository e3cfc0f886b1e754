"""A topology's shape as JSON, its graph, and its configuration made safe to show.

``structure`` turns a ``StormTopology`` (plain data: unpickling it runs no component code)
into what the UI and the REST API need: each component's kind, parallelism, tasks,
declared streams and subscriptions. ``graph`` lays it out as nodes and edges (one edge per
subscription, labelled with its stream and grouping). ``redact`` (``squall.api.redaction``)
hides configuration values that are secrets, by key and by value, since reads need no token.
"""

from __future__ import annotations

from squall.api.redaction import REDACTED, SECRET_KEY, redact
from squall.api.topology import StormTopology

__all__ = ["REDACTED", "SECRET_KEY", "graph", "is_system", "layers", "redact", "structure"]



def is_system(component: str) -> bool:
    """True for components squall adds (the acker ``__acker``, ``$checkpointspout``...)."""
    return component.startswith(("__", "$"))


def structure(topology: StormTopology) -> dict[str, dict]:
    """Component id -> kind, parallelism, tasks, streams and inputs (system components left out)."""
    out = {}
    for cid, c in sorted(topology.components.items()):
        if is_system(cid):
            continue
        out[cid] = {
            "kind": c.kind, "class": c.class_name, "parallelism": c.parallelism, "tasks": c.num_tasks,
            "streams": {s: list(d.fields) for s, d in sorted(c.streams.items())},
            "inputs": [{"component": i.component, "stream": i.stream, "grouping": i.grouping.kind,
                        "fields": list(i.grouping.fields) if i.grouping.fields else []}
                       for i in c.inputs if not is_system(i.component)],
            "memory_load_mb": c.memory_load_mb, "cpu_load_percent": c.cpu_load_percent,
            "stateful": c.stateful,
        }
    return out


def layers(shape: dict[str, dict]) -> dict[str, int]:
    """Each component's column in the graph: spouts 0, a bolt one past its deepest input.

    >>> layers({"s": {"kind": "spout", "inputs": []},
    ...         "a": {"kind": "bolt", "inputs": [{"component": "s"}]},
    ...         "b": {"kind": "bolt", "inputs": [{"component": "a"}, {"component": "s"}]}})
    {'a': 1, 'b': 2, 's': 0}
    """
    depth: dict[str, int] = {}
    visiting: set[str] = set()

    def visit(cid: str) -> int:
        if cid in depth:
            return depth[cid]
        if cid in visiting or cid not in shape:  # a cycle (allowed in Storm) or an unknown source
            return 0
        visiting.add(cid)
        parents = [i["component"] for i in shape[cid]["inputs"] if i["component"] != cid]
        d = 0 if shape[cid]["kind"] == "spout" or not parents else 1 + max(visit(p) for p in parents)
        visiting.discard(cid)
        depth[cid] = d
        return d

    for cid in sorted(shape):
        visit(cid)
    return dict(sorted(depth.items()))


def graph(shape: dict[str, dict], components: dict[str, dict] | None = None) -> dict:
    """Nodes (with column, row, capacity) and edges (stream, grouping, throughput) of a topology.

    ``components`` are live figures by component (``capacity``, ``emitted``, ``executed``);
    an edge's ``tuples`` is what its subscriber executed (the share a subscriber of several
    streams got from each is not measured), ``emitted`` what its source emitted.
    """
    figures = components or {}
    col = layers(shape)
    rows: dict[int, int] = {}
    nodes = []
    for cid in sorted(shape, key=lambda c: (col[c], c)):
        row = rows.get(col[cid], 0)
        rows[col[cid]] = row + 1
        f = figures.get(cid, {})
        nodes.append({"id": cid, "kind": shape[cid]["kind"], "column": col[cid], "row": row,
                      "parallelism": shape[cid]["parallelism"], "tasks": shape[cid]["tasks"],
                      "capacity": f.get("capacity"), "emitted": f.get("emitted"),
                      "executed": f.get("executed")})
    edges = []
    for cid in sorted(shape):
        for i in shape[cid]["inputs"]:
            src = figures.get(i["component"], {})
            edges.append({"source": i["component"], "target": cid, "stream": i["stream"],
                          "grouping": i["grouping"], "fields": i["fields"],
                          "emitted": src.get("emitted"), "tuples": figures.get(cid, {}).get("executed")})
    return {"nodes": nodes, "edges": edges}
