"""``${name}`` from a properties file and ``${ENV-NAME}`` from the environment (Flux's).

Substitution works on the text, line by line, before the YAML is parsed (as Storm's
``FluxParser``), so a property may hold a whole YAML value such as a list. ``${name[i]}``
takes item ``i`` of a list-valued property. With a filter on, a name it cannot resolve is
an error naming the line; with no filter, ``${...}`` is left as written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from squall.flux.errors import FluxError

VARIABLE = re.compile(r"\$\{(?P<var>[^}]+)\}")
LIST_ITEM = re.compile(r"^(?P<name>.+)\[(?P<index>\d+)\]$")


def read_properties(path: str) -> dict[str, str]:
    """A Java-style properties file: ``key=value`` or ``key: value``, ``#``/``!`` comments."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise FluxError(path, None, f"cannot read the properties file: {e.strerror or e}") from None
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        raw = lines[i].strip()
        i += 1
        while raw.endswith("\\") and i < len(lines):  # a continued line
            raw = raw[:-1] + lines[i].strip()
            i += 1
        if not raw or raw[0] in "#!":
            continue
        m = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", raw)
        if m is None:
            props[raw] = ""
        else:
            props[m.group(1)] = m.group(2)
    return props


def substitute(text: str, file: str, properties: Mapping[str, str] | None, env: bool,
               environ: Mapping[str, str] | None = None) -> str:
    """``text`` with its variables replaced; lines stay where they were."""
    if properties is None and not env:
        return text
    environ = os.environ if environ is None else environ
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        if "${" in line and not line.lstrip().startswith("#"):
            line = VARIABLE.sub(lambda m: _value(m.group("var"), file, number, properties,  # noqa: B023
                                                 env, environ), line)
        out.append(line)
    return "\n".join(out)


def _value(var: str, file: str, line: int, properties: Mapping[str, str] | None, env: bool,
           environ: Mapping[str, str]) -> str:
    if var.startswith("ENV-"):
        if not env:
            return "${" + var + "}"
        name = var[4:]
        if name not in environ:
            raise FluxError(file, line, f"${{{var}}}: environment variable {name!r} is not set")
        return environ[name]
    if properties is None:
        return "${" + var + "}"
    if var in properties:
        return properties[var]
    item = LIST_ITEM.match(var)
    if item and item.group("name") in properties:
        return _list_item(properties[item.group("name")], int(item.group("index")), var, file, line)
    raise FluxError(file, line, f"${{{var}}} is not defined in the properties file or by --param; "
                                f"add '{var}=...' to the file, pass --param {var}=..., or fix the name")


def _list_item(value: str, index: int, var: str, file: str, line: int) -> str:
    inner = value.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise FluxError(file, line, f"${{{var}}}: the property is not a list ({value!r})")
    items = [x.strip().strip('"').strip("'") for x in inner[1:-1].split(",")]
    if index >= len(items):
        raise FluxError(file, line, f"${{{var}}}: the list has {len(items)} item(s)")
    return items[index]
