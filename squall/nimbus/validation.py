"""What Nimbus checks in an upload before anything is stored or launched.

The client checked the topology already; Nimbus checks again (as JStorm's does), since
anyone with the token can call the REST API: the name, that the topology unpickles to a
``StormTopology``, the normalised configuration (``prepare_conf``), each component's
parallelism against ``topology.max.task.parallelism`` (lowered to it, as Storm does), and
that a task plan can be made. Unpickling runs code from the upload, which is why uploads
need the token.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

import cloudpickle

from squall.api.errors import InvalidTopologyError
from squall.api.topology import StormTopology
from squall.nimbus.errors import InvalidRequest
from squall.runtime.layout import part_difference
from squall.runtime.plan import make_plan
from squall.runtime.submission import check_name, prepare_conf, prepare_topology, with_parallelism
from squall.scheduler import build_request

MAX_PARALLELISM_KEY = "topology.max.task.parallelism"


@dataclass(frozen=True)
class Upload:
    """A validated upload: what gets stored as one version."""

    conf: dict
    topology: StormTopology
    topology_bytes: bytes
    code: bytes
    parallelism: dict[str, int]  # caps from normalisation, applied at every launch
    workers: int


def _b64(body: dict, key: str) -> bytes:
    value = body.get(key)
    if not isinstance(value, str):
        raise InvalidRequest(f"the request needs {key!r} (base64)")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(f"{key!r} is not valid base64") from None


def decode_upload(body: dict, max_parallelism: int | None = None) -> Upload:
    """Check an upload's ``conf``, ``topology`` and ``code``; raise ``InvalidRequest``."""
    conf = body.get("conf") or {}
    if not isinstance(conf, dict):
        raise InvalidRequest("'conf' must be a JSON object")
    code = _b64(body, "code")
    if not zipfile.is_zipfile(io.BytesIO(code)):
        raise InvalidRequest("'code' is not a zip archive")
    raw = _b64(body, "topology")
    try:
        topology = cloudpickle.loads(raw)
    except Exception as e:  # noqa: BLE001 - a bad pickle can raise anything
        raise InvalidRequest(f"the topology cannot be unpickled: {type(e).__name__}: {e}") from None
    if not isinstance(topology, StormTopology):
        raise InvalidRequest(f"the upload holds a {type(topology).__name__}, not a StormTopology "
                             f"(from TopologyBuilder.create_topology())")
    try:
        merged = prepare_conf(conf, topology)
        cap = merged.get(MAX_PARALLELISM_KEY) or max_parallelism
        caps = {}
        if cap is not None:
            if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
                raise InvalidTopologyError(f"{MAX_PARALLELISM_KEY} must be a positive integer, got {cap!r}")
            caps = {cid: cap for cid, c in topology.components.items() if c.parallelism > cap}
        prepared = prepare_topology(with_parallelism(topology, caps), merged)
        plan = make_plan(prepared, merged)
        build_request("upload", plan, prepared, merged, ())  # the placement keys, read as the scheduler will
    except InvalidTopologyError as e:
        raise InvalidRequest(f"invalid topology: {e}") from None
    return Upload(conf, topology, raw, code, caps, plan.num_workers)


def check_topology_name(name: Any) -> str:
    """The name if valid, else ``InvalidRequest``."""
    try:
        return check_name(name)
    except InvalidTopologyError as e:
        raise InvalidRequest(str(e)) from None


def json_conf(conf: dict) -> dict:
    """``conf`` if JSON can store it, else ``InvalidRequest`` naming the key."""
    for key, value in conf.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise InvalidRequest(f"config {key!r} is not JSON: {value!r}") from None
    return conf


def shape(topology: StormTopology) -> dict:
    """What two versions must share to run side by side in a gray upgrade (and their sizes)."""
    out = {}
    for cid, c in sorted(topology.components.items()):
        out[cid] = {
            "kind": c.kind, "parallelism": c.parallelism, "tasks": c.num_tasks,
            "inputs": sorted((i.component, i.stream, i.grouping.kind,
                              tuple(i.grouping.fields) if i.grouping.fields else ())
                             for i in c.inputs),
            "streams": {s: (tuple(d.fields), d.direct) for s, d in sorted(c.streams.items())},
        }
    return out


def shape_difference(old: StormTopology, new: StormTopology) -> str | None:
    """None if the shapes match, else one line saying what differs and how."""
    a, b = shape(old), shape(new)
    if set(a) != set(b):
        added, removed = sorted(set(b) - set(a)), sorted(set(a) - set(b))
        return f"components: added {added or 'none'}, removed {removed or 'none'}"
    parts = [part_difference(f"{key} of {cid!r}", a[cid][key], b[cid][key]) for cid in a for key in a[cid]]
    return "; ".join(p for p in parts if p) or None


def running_parallelism(topology: StormTopology, parallelism: dict[str, int]) -> dict[str, int]:
    """Each component's parallelism as it runs: the version's, with the record's (rebalances, caps)."""
    return {cid: int(parallelism.get(cid, c.parallelism)) for cid, c in sorted(topology.components.items())}


def gray_difference(running: StormTopology, parallelism: dict[str, int], new: StormTopology) -> str | None:
    """Why ``new`` cannot run beside ``running`` in a gray upgrade (None if it can).

    The new code runs under the running shape: ``parallelism`` (the running topology's, as
    rebalanced) applies to both, and the worker count is the running one, so neither is
    compared. What the code decides is: the components, their kinds, inputs (groupings) and
    streams, and the task count once the running parallelism applies (``num_tasks`` fixes
    how keyed state is split).
    """
    known = {cid: n for cid, n in parallelism.items() if cid in new.components}
    return shape_difference(with_parallelism(running, parallelism), with_parallelism(new, known))
