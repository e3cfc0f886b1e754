"""Making objects from Flux definitions.

``className`` by import path, constructor or factory arguments (with ``ref``/``reflist``),
``properties`` and ``configMethods``.
"""

from __future__ import annotations

import importlib
from typing import Any

from squall.flux.document import BEAN_KEYS, check_keys
from squall.flux.errors import FluxError
from squall.flux.yamlfile import Node, Seq


def import_class(path: Any, node: Node, key: str = "className") -> Any:
    """The object named by the import path ``package.module.Name`` (``Outer.Inner`` allowed)."""
    line = node.line_of(key)
    if not isinstance(path, str) or not path:
        raise FluxError(node.file, line, f"'{key}' must be an import path such as "
                                         f"'mypackage.bolts.SplitBolt', got {path!r}")
    parts = path.split(".")
    error: Exception | None = None
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name and not module_name.startswith(e.name) and e.name != module_name:
                error = e  # the module exists but imports something missing
                break
            continue
        except Exception as e:  # noqa: BLE001 - importing user code can raise anything
            raise FluxError(node.file, line, f"importing {module_name!r} for {path!r} raised "
                                             f"{type(e).__name__}: {e}") from None
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            raise FluxError(node.file, line, f"unknown class {path!r}: module {module_name!r} "
                                             f"has no {'.'.join(parts[cut:])!r}") from None
        return obj
    detail = f" ({error})" if error else ""
    raise FluxError(node.file, line, f"unknown class {path!r}: its module {parts[0]!r} is not "
                                     f"importable from the directory of the file, the current "
                                     f"directory or sys.path{detail} (set PYTHONPATH, or run squall "
                                     f"from the directory holding {parts[0]!r})")


class Objects:
    """The objects built so far, by id, for ``ref`` and ``reflist``."""

    def __init__(self) -> None:
        self.by_id: dict[str, Any] = {}

    def resolve(self, value: Any, node: Any, line: int) -> Any:
        """An argument with its references replaced by the objects they name."""
        if isinstance(value, Node):
            if set(value) == {"ref"}:
                return self.get(value["ref"], value, value.line_of("ref"))
            if set(value) == {"reflist"}:
                refs = value["reflist"]
                if not isinstance(refs, list):
                    raise FluxError(value.file, value.line_of("reflist"), "'reflist' must be a list of ids")
                return [self.get(r, value, value.line_of("reflist")) for r in refs]
            return {k: self.resolve(v, value, value.line_of(k)) for k, v in value.items()}
        if isinstance(value, Seq):
            return [self.resolve(v, value, value.line_of(i)) for i, v in enumerate(value)]
        return value

    def get(self, ref: Any, node: Node, line: int) -> Any:
        """The object ``ref`` names."""
        if ref not in self.by_id:
            known = ", ".join(sorted(map(str, self.by_id))) or "none defined yet"
            raise FluxError(node.file, line, f"ref {ref!r} names no component defined before it "
                                             f"(known: {known}); define it under 'components' first")
        return self.by_id[ref]

    def build(self, node: Node, what: str, allowed: tuple[str, ...] = BEAN_KEYS) -> Any:
        """Make the object ``node`` defines; register it by id."""
        check_keys(node, allowed, what)
        cls = import_class(node.get("className"), node)
        label = node.get("id", node.get("className"))
        factory = node.get("factory")
        if factory is not None:
            target = getattr(cls, str(factory), None)
            if not callable(target):
                raise FluxError(node.file, node.line_of("factory"),
                                f"{label}: {node['className']} has no factory method {factory!r}")
            args_key, target_name = "factoryArgs", f"{node['className']}.{factory}"
        else:
            if not callable(cls):
                raise FluxError(node.file, node.line_of("className"), f"{label}: {node['className']} "
                                                                      f"is not a class")
            target, args_key, target_name = cls, "constructorArgs", node["className"]
        args = self._args(node, args_key)
        kwargs = self._kwargs(node)
        try:
            obj = target(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the user's constructor: report where it was called
            raise FluxError(node.file, node.line_of(args_key if args_key in node else "className"),
                            f"{label}: {target_name}({_show(args, kwargs)}) raised "
                            f"{type(e).__name__}: {e}") from None
        self._properties(node, obj, label)
        self._config_methods(node, obj, label)
        if "id" in node:
            self.by_id[node["id"]] = obj
        return obj

    def _args(self, node: Node, key: str) -> list:
        raw = node.get(key)
        if raw is None:
            return []
        if not isinstance(raw, Seq):
            raise FluxError(node.file, node.line_of(key), f"'{key}' must be a list of arguments")
        return [self.resolve(v, raw, raw.line_of(i)) for i, v in enumerate(raw)]

    def _kwargs(self, node: Node) -> dict:
        raw = node.get("constructorKwargs")
        if raw is None:
            return {}
        if not isinstance(raw, Node):
            raise FluxError(node.file, node.line_of("constructorKwargs"),
                            "'constructorKwargs' must be a mapping of argument names to values")
        return {str(k): self.resolve(v, raw, raw.line_of(k)) for k, v in raw.items()}

    def _properties(self, node: Node, obj: Any, label: Any) -> None:
        props = node.get("properties")
        if props is None:
            return
        if not isinstance(props, Seq):
            raise FluxError(node.file, node.line_of("properties"), "'properties' must be a list")
        for i, prop in enumerate(props):
            check_keys(prop, ("name", "value", "ref", "reflist"), "a property")
            name = prop.get("name")
            if not isinstance(name, str):
                raise FluxError(prop.file, props.line_of(i), "a property needs a 'name'")
            if "value" in prop:
                value = self.resolve(prop["value"], prop, prop.line_of("value"))
            elif "ref" in prop or "reflist" in prop:
                value = self.resolve(_sub(prop), prop, prop.line)
            else:
                raise FluxError(prop.file, prop.line, f"property {name!r} needs 'value', 'ref' "
                                                      f"or 'reflist'")
            setter = getattr(obj, f"set_{name}", None)
            try:
                if callable(setter):
                    setter(value)
                else:
                    setattr(obj, name, value)
            except Exception as e:  # noqa: BLE001
                raise FluxError(prop.file, prop.line_of("name"), f"{label}: setting property "
                                f"{name!r} raised {type(e).__name__}: {e}") from None

    def _config_methods(self, node: Node, obj: Any, label: Any) -> None:
        methods = node.get("configMethods")
        if methods is None:
            return
        if not isinstance(methods, Seq):
            raise FluxError(node.file, node.line_of("configMethods"), "'configMethods' must be a list")
        for call in methods:
            check_keys(call, ("name", "args"), "a config method")
            name = call.get("name")
            method = getattr(obj, str(name), None)
            if not callable(method):
                raise FluxError(call.file, call.line_of("name"),
                                f"{label}: unable to find configuration method {name!r} on "
                                f"{type(obj).__name__}")
            args = self._args(call, "args")
            try:
                method(*args)
            except Exception as e:  # noqa: BLE001
                where = call.line_of("args" if "args" in call else "name")
                raise FluxError(call.file, where, f"{label}: {name}({_show(args, {})}) raised "
                                                  f"{type(e).__name__}: {e}") from None


def _sub(prop: Node) -> Node:
    sub = Node({k: v for k, v in prop.items() if k in ("ref", "reflist")})
    sub.line, sub.file = prop.line, prop.file
    sub.key_lines = {k: prop.line_of(k) for k in sub}
    return sub


def _show(args: list, kwargs: dict) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    text = ", ".join(parts)
    return text if len(text) <= 120 else text[:117] + "..."
