"""Reading YAML with the line of every mapping, key and list item (for error messages).

``parse(text, file)`` returns plain Python values in which each mapping is a ``Node`` (a
dict that knows its line and the line of each key) and each list a ``Seq`` (a list that
knows its line and each item's line). Lines are 1-based, as editors show them.
"""

from __future__ import annotations

from typing import Any

from squall.flux.errors import FluxError


class Node(dict):
    """A YAML mapping with its line and the line of each key."""

    line: int = 0
    file: str = ""
    key_lines: dict

    def line_of(self, key: str) -> int:
        """The line of ``key`` (the mapping's own line if absent)."""
        return self.key_lines.get(key, self.line) if hasattr(self, "key_lines") else self.line


class Seq(list):
    """A YAML list with its line and the line of each item."""

    line: int = 0
    file: str = ""
    item_lines: list

    def line_of(self, index: int) -> int:
        """The line of item ``index``."""
        lines = getattr(self, "item_lines", [])
        return lines[index] if index < len(lines) else self.line


def _yaml() -> Any:
    try:
        import yaml
    except ImportError as e:  # pragma: no cover - the flux extra is not installed
        raise ImportError("YAML topologies need PyYAML: pip install 'squall[flux]'") from e
    return yaml


def parse(text: str, file: str) -> Any:
    """Parse one YAML document, keeping lines; ``FluxError`` names the line of a syntax error."""
    yaml = _yaml()
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(e, "problem", None) or str(e)
        raise FluxError(file, line, f"YAML syntax error: {problem}") from None
    if node is None:
        raise FluxError(file, 1, "the file is empty; a topology needs at least 'name' and 'spouts'")
    constructor = yaml.SafeLoader("")
    return _build(node, constructor, file, yaml)


def _build(node: Any, constructor: Any, file: str, yaml: Any) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = Node()
        out.line = line
        out.file = file
        out.key_lines = {}
        for key_node, value_node in node.value:
            key = _build(key_node, constructor, file, yaml)
            if isinstance(key, (dict, list)):
                raise FluxError(file, key_node.start_mark.line + 1, "a mapping key must be a plain value")
            if key == "<<":  # merge key: fold the merged mapping(s) in
                merged = _build(value_node, constructor, file, yaml)
                for m in merged if isinstance(merged, list) else [merged]:
                    for k, v in m.items():
                        out.setdefault(k, v)
                        out.key_lines.setdefault(k, m.line_of(k))
                continue
            if key in out:
                raise FluxError(file, key_node.start_mark.line + 1, f"key {key!r} appears twice "
                                f"(first on line {out.key_lines[key]})")
            out[key] = _build(value_node, constructor, file, yaml)
            out.key_lines[key] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = Seq(_build(v, constructor, file, yaml) for v in node.value)
        seq.line = line
        seq.file = file
        seq.item_lines = [v.start_mark.line + 1 for v in node.value]
        return seq
    try:
        return constructor.construct_object(node, deep=True)
    except yaml.YAMLError as e:
        raise FluxError(file, line, f"bad value: {e}") from None
