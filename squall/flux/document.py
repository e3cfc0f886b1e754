"""Reading a Flux file: substitution, YAML with lines, includes, and the keys of each section.

The result is one ``Node`` per topology whose definitions each keep the file and line they
came from, so that every later error can name them.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from squall.flux.errors import FluxError
from squall.flux.substitution import substitute
from squall.flux.yamlfile import Node, Seq, parse

TOP_KEYS = ("name", "config", "components", "spouts", "bolts", "streams", "includes",
            "topologySource")
BEAN_KEYS = ("id", "className", "constructorArgs", "constructorKwargs", "factory", "factoryArgs",
             "properties", "configMethods")
COMPONENT_KEYS = BEAN_KEYS + ("parallelism", "numTasks", "config", "onHeapMemoryLoad",
                              "offHeapMemoryLoad", "cpuLoad")
STREAM_KEYS = ("name", "from", "to", "grouping")
GROUPING_KEYS = ("type", "args", "streamId", "customClass")
INCLUDE_KEYS = ("resource", "file", "override")
MAX_INCLUDE_DEPTH = 10


def check_keys(node: Any, allowed: tuple[str, ...], what: str) -> Node:
    """``node`` must be a mapping whose keys are all in ``allowed``; else a ``FluxError``."""
    if not isinstance(node, Node):
        line = getattr(node, "line", None)
        raise FluxError(getattr(node, "file", "") or "?", line,
                        f"{what} must be a mapping, got {type(node).__name__} {node!r}")
    for key in node:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(allowed)}"
            raise FluxError(node.file, node.line_of(key), f"unknown key {key!r} in {what}{hint}")
    return node


def section(doc: Node, key: str) -> Seq:
    """The list under ``key`` (empty when absent); a ``FluxError`` if it is not a list."""
    value = doc.get(key)
    if value is None:
        empty = Seq()
        empty.line, empty.file = doc.line_of(key), doc.file
        return empty
    if not isinstance(value, Seq):
        raise FluxError(doc.file, doc.line_of(key), f"'{key}' must be a list of definitions")
    return value


def load_document(path: str, properties: Mapping[str, str] | None, env: bool,
                  depth: int = 0) -> Node:
    """Read ``path`` into a topology ``Node``, includes resolved."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise FluxError(path, None, f"cannot read the file: {e.strerror or e}") from None
    doc = parse(substitute(text, path, properties, env), path)
    check_keys(doc, TOP_KEYS, "the topology")
    includes = section(doc, "includes")
    for i, inc in enumerate(includes):
        check_keys(inc, INCLUDE_KEYS, "an include")
        if depth >= MAX_INCLUDE_DEPTH:
            raise FluxError(path, includes.line_of(i), f"includes nest deeper than "
                                                       f"{MAX_INCLUDE_DEPTH} levels (a cycle?)")
        target = _include_path(inc, path)
        merge(doc, load_document(target, properties, env, depth + 1), bool(inc.get("override")))
    return doc


def _include_path(inc: Node, parent: str) -> str:
    file = inc.get("file")
    if not isinstance(file, str) or not file:
        raise FluxError(inc.file, inc.line_of("file"), "an include needs 'file', a path")
    if inc.get("resource"):
        # a resource is looked up on the import path, as Java looks on the classpath
        for root in sys.path:
            candidate = Path(root or ".") / file.lstrip("/")
            if candidate.is_file():
                return str(candidate)
        raise FluxError(inc.file, inc.line_of("file"), f"resource {file!r} is not on the import path")
    candidate = Path(file)
    if not candidate.is_absolute():
        candidate = Path(parent).parent / candidate
    if not candidate.is_file():
        raise FluxError(inc.file, inc.line_of("file"), f"included file {file!r} does not exist "
                                                       f"(looked at {candidate})")
    return str(candidate)


def merge(doc: Node, included: Node, override: bool) -> None:
    """Fold ``included`` into ``doc`` as Flux does: by id; ``override`` lets it replace."""
    if included.get("name") is not None and (doc.get("name") is None or override):
        doc["name"] = included["name"]
        doc.key_lines["name"] = included.line_of("name")
    if isinstance(included.get("config"), Node):
        config = doc.get("config")
        if not isinstance(config, Node):
            doc["config"] = config = included["config"]
        else:
            for key, value in included["config"].items():
                if override or key not in config:
                    config[key] = value
    for key in ("components", "spouts", "bolts"):
        mine, theirs = section(doc, key), section(included, key)
        ids = {d.get("id"): i for i, d in enumerate(mine) if isinstance(d, Node)}
        for i, d in enumerate(theirs):
            did = d.get("id") if isinstance(d, Node) else None
            if did in ids:
                if override:
                    mine[ids[did]] = d
                    mine.item_lines[ids[did]] = theirs.line_of(i)
                continue
            mine.append(d)
            mine.item_lines = [*getattr(mine, "item_lines", []), theirs.line_of(i)]
        doc[key] = mine
    streams, more = section(doc, "streams"), section(included, "streams")
    for i, s in enumerate(more):
        streams.append(s)
        streams.item_lines = [*getattr(streams, "item_lines", []), more.line_of(i)]
    doc["streams"] = streams
