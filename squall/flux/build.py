"""Building a topology from a Flux document: spouts, bolts, streams with groupings, config.

Streams are checked here, before ``TopologyBuilder.create_topology``, so that a wrong
component, stream, field or grouping is reported at the line of the stream that names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from squall.api.builder import ComponentDeclarer, TopologyBuilder
from squall.api.components import OutputFieldsDeclarer
from squall.api.conf_checks import check_setting
from squall.api.config import Config
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.api.topology import StormTopology
from squall.flux.document import (
    COMPONENT_KEYS,
    GROUPING_KEYS,
    STREAM_KEYS,
    check_keys,
    section,
)
from squall.flux.errors import FluxError
from squall.flux.objects import Objects
from squall.flux.yamlfile import Node
from squall.runtime.submission import prepare_conf

GROUPINGS = ("SHUFFLE", "FIELDS", "ALL", "GLOBAL", "NONE", "DIRECT", "LOCAL_OR_SHUFFLE",
             "PARTIAL_KEY", "CUSTOM")


@dataclass
class Built:
    """What a Flux document builds into."""

    name: str
    conf: Config
    topology: StormTopology
    objects: dict[str, Any]


def build(doc: Node) -> Built:
    """Make every object, wire the streams and validate; ``FluxError`` on any mistake."""
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise FluxError(doc.file, doc.line_of("name"), "the topology needs a 'name' (a string)")
    conf = _config(doc)
    objects = Objects()
    for comp in section(doc, "components"):
        _need_id(comp, "a component")
        objects.build(comp, f"component {comp.get('id')!r}")
    if "topologySource" in doc:
        topology = _from_source(doc, objects, conf)
        return _checked(Built(name, conf, topology, objects.by_id), doc)
    builder = TopologyBuilder()
    declarers: dict[str, tuple[ComponentDeclarer, Node]] = {}
    spouts = section(doc, "spouts")
    if not spouts:
        raise FluxError(doc.file, doc.line_of("spouts"), "the topology has no spouts; add a "
                                                         "'spouts' list")
    for kind, defs in (("spout", spouts), ("bolt", section(doc, "bolts"))):
        for d in defs:
            _need_id(d, f"a {kind}")
            if d["id"] in declarers or d["id"] in objects.by_id:
                raise FluxError(d.file, d.line_of("id"), f"id {d['id']!r} is used twice")
            obj = objects.build(d, f"{kind} {d['id']!r}", COMPONENT_KEYS)
            declarers[d["id"]] = (_declare(builder, kind, d, obj), d)
    for stream in section(doc, "streams"):
        _stream(stream, declarers, objects)
    try:
        topology = builder.create_topology()
    except InvalidTopologyError as e:
        raise _located(e, declarers, doc) from None
    return _checked(Built(name, conf, topology, objects.by_id), doc)


def _need_id(d: Any, what: str) -> None:
    if not isinstance(d, Node):
        raise FluxError(getattr(d, "file", "?"), getattr(d, "line", None),
                        f"{what} must be a mapping with 'id' and 'className'")
    if not isinstance(d.get("id"), str) or not d["id"]:
        raise FluxError(d.file, d.line_of("id"), f"{what} needs an 'id' (a string)")


def _config(doc: Node) -> Config:
    raw = doc.get("config")
    if raw is None:
        return Config()
    if not isinstance(raw, Node):
        raise FluxError(doc.file, doc.line_of("config"), "'config' must be a mapping of keys to values")
    _check_values(raw, "config")
    return Config({str(k): _plain(v) for k, v in raw.items()})


def _check_values(conf: Node, where: str) -> None:
    """Every key squall knows, checked as submit checks it, at the line of its value."""
    for key, value in conf.items():
        try:
            check_setting(str(key), _plain(value), where)
        except InvalidTopologyError as e:
            raise FluxError(conf.file, conf.line_of(key), str(e)) from None


def _checked(built: Built, doc: Node) -> Built:
    """``built`` once submit's checks of the whole configuration pass (keys that go together)."""
    try:
        prepare_conf(built.conf, built.topology)
    except InvalidTopologyError as e:
        config = doc.get("config")
        named = [k for k in (config or {}) if re.search(rf"(?<![\w.]){re.escape(str(k))}(?![\w.])", str(e))]
        if isinstance(config, Node) and named:
            raise FluxError(config.file, config.line_of(named[0]), str(e)) from None
        raise FluxError(doc.file, doc.line_of("config") if config else doc.line, str(e)) from None
    return built


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _declare(builder: TopologyBuilder, kind: str, d: Node, obj: Any) -> ComponentDeclarer:
    parallelism = d.get("parallelism", 1)
    try:
        if kind == "spout":
            declarer = builder.set_spout(d["id"], obj, parallelism)
        else:
            declarer = builder.set_bolt(d["id"], obj, parallelism)
    except InvalidTopologyError as e:
        raise FluxError(d.file, d.line_of("className"), str(e)) from None
    if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
        raise FluxError(d.file, d.line_of("parallelism"),
                        f"{kind} {d['id']!r}: parallelism must be a positive integer, got {parallelism!r}")
    if "numTasks" in d:
        n = d["numTasks"]
        if not isinstance(n, int) or isinstance(n, bool) or n < parallelism:
            raise FluxError(d.file, d.line_of("numTasks"),
                            f"{kind} {d['id']!r}: numTasks must be an integer >= parallelism "
                            f"({parallelism}), got {n!r}")
        declarer.set_num_tasks(n)
    memory = sum(float(d.get(k) or 0) for k in ("onHeapMemoryLoad", "offHeapMemoryLoad"))
    if memory:
        declarer.set_memory_load(memory)
    if d.get("cpuLoad") is not None:
        declarer.set_cpu_load(float(d["cpuLoad"]))
    extra = d.get("config")
    if extra is not None:
        if not isinstance(extra, Node):
            raise FluxError(d.file, d.line_of("config"), f"{kind} {d['id']!r}: 'config' must be a mapping")
        _check_values(extra, f"{kind} {d['id']!r}: config")
        for key, value in extra.items():
            declarer.add_configuration(str(key), _plain(value))
    return declarer


def _stream(s: Any, declarers: dict[str, tuple[ComponentDeclarer, Node]], objects: Objects) -> None:
    check_keys(s, STREAM_KEYS, "a stream")
    src, dst = s.get("from"), s.get("to")
    for key, cid in (("from", src), ("to", dst)):
        if cid not in declarers:
            known = ", ".join(sorted(declarers))
            raise FluxError(s.file, s.line_of(key), f"stream {key} unknown component {cid!r}; "
                                                    f"known: {known}")
    target, target_def = declarers[dst]
    if target.kind != "bolt":
        raise FluxError(s.file, s.line_of("to"), f"stream to {dst!r}: a spout takes no input; "
                                                 f"streams go to bolts")
    g = check_keys(s.get("grouping"), GROUPING_KEYS, "a grouping") if "grouping" in s else None
    if g is None:
        raise FluxError(s.file, s.line, f"stream {src} --> {dst} needs a 'grouping' with a 'type'")
    kind = g.get("type")
    if kind not in GROUPINGS:
        raise FluxError(g.file, g.line_of("type"), f"unknown grouping type {kind!r}; use one of "
                                                   f"{', '.join(GROUPINGS)}")
    stream_id = g.get("streamId", "default")
    declared = _streams_of(declarers[src][0])
    if stream_id not in declared:
        where = g.line_of("streamId") if "streamId" in g else s.line_of("from")
        raise FluxError(g.file if "streamId" in g else s.file, where,
                        f"component {src!r} declares no stream {stream_id!r} (declared: "
                        f"{', '.join(sorted(declared)) or 'none'})")
    sdef = declared[stream_id]
    if (kind == "DIRECT") != sdef.direct:
        raise FluxError(g.file, g.line_of("type"),
                        f"stream {stream_id!r} of {src!r} is {'' if sdef.direct else 'not '}direct: "
                        f"use {'DIRECT' if sdef.direct else 'a grouping other than DIRECT'}")
    fields = None
    if kind in ("FIELDS", "PARTIAL_KEY"):
        args = g.get("args")
        if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
            raise FluxError(g.file, g.line_of("args" if "args" in g else "type"),
                            f"{kind} grouping needs 'args', a list of field names")
        for name in args:
            if name not in sdef.fields:
                raise FluxError(g.file, g.line_of("args"), f"{kind} grouping on unknown field "
                                                           f"{name!r}: stream {stream_id!r} of {src!r} "
                                                           f"has {list(sdef.fields)}")
        fields = Fields(*args)
    _group(target, kind, src, stream_id, fields, g, objects)


def _streams_of(declarer: ComponentDeclarer) -> dict:
    out = OutputFieldsDeclarer()
    try:
        declarer.component.declare_output_fields(out)
    except Exception:  # noqa: BLE001 - reported by create_topology with the component's name
        return {}
    return out.streams


def _group(target: ComponentDeclarer, kind: str, src: str, stream: str, fields: Fields | None,
           g: Node, objects: Objects) -> None:
    if kind == "FIELDS":
        assert fields is not None
        target.fields_grouping(src, fields, stream)
    elif kind == "PARTIAL_KEY":
        method = getattr(target, "partial_key_grouping", None)
        if method is None:
            raise FluxError(g.file, g.line_of("type"), "PARTIAL_KEY grouping is not available in "
                                                       "this version of squall")
        method(src, fields, stream)
    elif kind == "CUSTOM":
        spec = g.get("customClass")
        if not isinstance(spec, Node):
            raise FluxError(g.file, g.line_of("customClass" if "customClass" in g else "type"),
                            "CUSTOM grouping needs 'customClass' with a 'className'")
        grouping = objects.build(spec, "the custom grouping")
        if not callable(getattr(grouping, "choose_tasks", None)):
            raise FluxError(spec.file, spec.line_of("className"), f"{spec.get('className')} is not "
                                                                  f"a CustomStreamGrouping (no choose_tasks)")
        target.custom_grouping(src, grouping, stream)
    else:
        method_name = {"SHUFFLE": "shuffle_grouping", "ALL": "all_grouping",
                       "GLOBAL": "global_grouping", "NONE": "none_grouping",
                       "DIRECT": "direct_grouping", "LOCAL_OR_SHUFFLE": "local_or_shuffle_grouping"}[kind]
        getattr(target, method_name)(src, stream)


def _from_source(doc: Node, objects: Objects, conf: Config) -> StormTopology:
    source = doc["topologySource"]
    check_keys(source, ("className", "methodName", "constructorArgs", "constructorKwargs",
                        "configMethods", "properties"), "'topologySource'")
    obj = objects.build(source, "the topology source",
                        ("className", "constructorArgs", "constructorKwargs", "configMethods",
                         "properties", "methodName"))
    names = [source["methodName"]] if "methodName" in source else ["get_topology", "getTopology"]
    method = next((getattr(obj, n) for n in names if callable(getattr(obj, n, None))), None)
    if method is None:
        raise FluxError(source.file, source.line_of("methodName" if "methodName" in source else "className"),
                        f"{source['className']} has no method {' or '.join(names)}")
    try:
        topology = method(dict(conf))
    except Exception as e:  # noqa: BLE001
        raise FluxError(source.file, source.line, f"{source['className']}.{names[0]}(config) raised "
                                                  f"{type(e).__name__}: {e}") from None
    if not isinstance(topology, StormTopology):
        raise FluxError(source.file, source.line, f"{source['className']} returned "
                                                  f"{type(topology).__name__}, not a topology")
    return topology


def _located(e: InvalidTopologyError, declarers: dict[str, tuple[ComponentDeclarer, Node]],
             doc: Node) -> FluxError:
    """``e`` at the line of the component it names (the topology's first line otherwise)."""
    for cid in re.findall(r"'([^']+)'", str(e)):
        if cid in declarers:
            d = declarers[cid][1]
            return FluxError(d.file, d.line_of("id"), str(e))
    return FluxError(doc.file, doc.line, str(e))

