"""The handshake Storm sends a multilang subprocess: conf, pid directory and context."""

from __future__ import annotations

from typing import Any

from squall.api.context import TopologyContext
from squall.api.redaction import redact, secret_key
from squall.api.topology import Grouping

_GROUPING_TYPES = {
    "shuffle": "SHUFFLE", "fields": "FIELDS", "all": "ALL", "global": "GLOBAL", "none": "NONE",
    "direct": "DIRECT", "local_or_shuffle": "LOCAL_OR_SHUFFLE", "custom": "CUSTOM_OBJECT",
}


def plain(value: Any) -> bool:
    """True for values JSON and msgpack both carry (what a conf can hand a subprocess)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    return False


def setup_conf(conf: dict, topology_name: str) -> dict:
    """The conf as the subprocess sees it: plain values only, secrets left out.

    The subprocess may log its conf, and is a program squall did not write: a key naming a
    secret (the topology's state key, a password...) is left out, and secrets inside other
    values (a provider's nested password, a JAAS line, a URL's password) are hidden
    (``squall.api.redaction``).
    """
    out = {k: redact(v) for k, v in conf.items() if isinstance(k, str) and plain(v) and not secret_key(k)}
    out.setdefault("topology.name", topology_name)
    return out


def _grouping(g: Grouping) -> dict:
    out: dict[str, Any] = {"type": _GROUPING_TYPES.get(g.kind, g.kind.upper())}
    if g.fields is not None:
        out["fields"] = list(g.fields)
    return out


def setup_context(context: TopologyContext) -> dict:
    """Storm's context for shell components (0.10.0 and later keys)."""
    me = context.component_id
    task_component = {str(t): c for c in context.get_component_ids()
                      for t in context.get_component_tasks(c)}
    streams = context.get_component_streams(me)
    sources: dict[str, dict[str, dict]] = {}
    source_fields: dict[str, dict[str, list[str]]] = {}
    for (component, stream), grouping in sorted(context.get_this_sources().items()):
        sources.setdefault(component, {})[stream] = _grouping(grouping) if grouping else {}
        try:
            fields = list(context.get_component_output_fields(component, stream))
        except KeyError:
            continue
        source_fields.setdefault(component, {})[stream] = fields
    return {
        "task->component": task_component,
        "taskid": context.task_id,
        "componentid": me,
        "stream->target->grouping": {
            stream: {c: _grouping(g) for c, g in targets.items()}
            for stream, targets in context.get_this_targets().items()
        },
        "streams": streams,
        "stream->outputfields": {s: list(context.get_component_output_fields(me, s)) for s in streams},
        "source->stream->grouping": sources,
        "source->stream->fields": source_fields,
    }


def setup_info(conf: dict, context: TopologyContext, pid_dir: str) -> dict:
    """The first message to the subprocess."""
    return {"conf": setup_conf(conf, context.topology_name), "pidDir": pid_dir,
            "context": setup_context(context)}
