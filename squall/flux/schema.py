"""The JSON Schema of a YAML topology, for editors (``python -m squall.flux.schema``).

The published copy is ``docs/flux.schema.json``; a test keeps it equal to ``SCHEMA``.
Editors with the YAML language server take it with a first line such as
``# yaml-language-server: $schema=<path or URL of flux.schema.json>``.
"""

from __future__ import annotations

import json
from typing import Any

_ARG: dict[str, Any] = {"description": "a value, or {ref: id}, or {reflist: [ids]}"}
_ARGS = {"type": "array", "items": _ARG}

_BEAN_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "description": "unique id, used by ref/reflist and streams"},
    "className": {"type": "string", "description": "Python import path, e.g. mypackage.bolts.Split"},
    "constructorArgs": {**_ARGS, "description": "positional constructor arguments"},
    "constructorKwargs": {"type": "object", "description": "keyword constructor arguments (squall)"},
    "factory": {"type": "string", "description": "a static/class method of className that builds it"},
    "factoryArgs": {**_ARGS, "description": "arguments of the factory"},
    "properties": {
        "type": "array",
        "items": {
            "type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "value": {}, "ref": {"type": "string"},
                           "reflist": {"type": "array", "items": {"type": "string"}}},
        },
        "description": "set_<name>(value) if the object has it, else the attribute",
    },
    "configMethods": {
        "type": "array",
        "items": {
            "type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "args": _ARGS},
        },
        "description": "methods called after construction, in order",
    },
}

_COMPONENT_PROPERTIES: dict[str, Any] = {
    **_BEAN_PROPERTIES,
    "parallelism": {"type": "integer", "minimum": 1},
    "numTasks": {"type": "integer", "minimum": 1},
    "config": {"type": "object", "description": "component configuration"},
    "onHeapMemoryLoad": {"type": "number"},
    "offHeapMemoryLoad": {"type": "number"},
    "cpuLoad": {"type": "number"},
}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://squall.invalid/flux.schema.json",
    "title": "squall YAML topology (Storm's Flux format)",
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "config": {"type": "object", "description": "topology configuration (Storm's keys)"},
        "components": {"type": "array", "items": {"$ref": "#/$defs/bean"}},
        "spouts": {"type": "array", "items": {"$ref": "#/$defs/component"}},
        "bolts": {"type": "array", "items": {"$ref": "#/$defs/component"}},
        "streams": {"type": "array", "items": {"$ref": "#/$defs/stream"}},
        "includes": {
            "type": "array",
            "items": {
                "type": "object", "required": ["file"], "additionalProperties": False,
                "properties": {"file": {"type": "string"}, "resource": {"type": "boolean"},
                               "override": {"type": "boolean"}},
            },
        },
        "topologySource": {
            "type": "object", "required": ["className"], "additionalProperties": False,
            "properties": {**{k: v for k, v in _BEAN_PROPERTIES.items()
                              if k not in ("id", "factory", "factoryArgs")},
                           "methodName": {"type": "string"}},
        },
    },
    "$defs": {
        "bean": {"type": "object", "required": ["id", "className"],
                 "additionalProperties": False, "properties": _BEAN_PROPERTIES},
        "component": {"type": "object", "required": ["id", "className"],
                      "additionalProperties": False, "properties": _COMPONENT_PROPERTIES},
        "stream": {
            "type": "object", "required": ["from", "to", "grouping"], "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "from": {"type": "string"},
                "to": {"type": "string"},
                "grouping": {
                    "type": "object", "required": ["type"], "additionalProperties": False,
                    "properties": {
                        "type": {"enum": ["SHUFFLE", "FIELDS", "ALL", "GLOBAL", "NONE", "DIRECT",
                                          "LOCAL_OR_SHUFFLE", "PARTIAL_KEY", "CUSTOM"]},
                        "args": {"type": "array", "items": {"type": "string"}},
                        "streamId": {"type": "string"},
                        "customClass": {"$ref": "#/$defs/customClass"},
                    },
                },
            },
        },
        "customClass": {"type": "object", "required": ["className"], "additionalProperties": False,
                        "properties": {k: v for k, v in _BEAN_PROPERTIES.items() if k != "id"}},
    },
}


def dumps() -> str:
    """The schema as the JSON text published in docs/flux.schema.json."""
    return json.dumps(SCHEMA, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(dumps(), end="")
