"""Finding the topology in a FILE and packaging its code for Nimbus.

The rule (``squall submit FILE`` and ``squall upgrade NAME FILE``): the file is imported
as a module (as part of its package when its directory has an ``__init__.py``, so its
relative imports work), then

1. a module-level function ``build_topology()`` is called; it returns a ``StormTopology``
   or a ``(conf, topology)`` pair. Its parameters are given as ``squall submit FILE
   --param name=value`` (Storm's ``storm jar ... Main args``): each is passed by keyword,
   converted to the parameter's annotation when that is ``int``, ``float`` or ``bool``,
   else a string. A parameter without a default that is not given is a one-line error;
   so is a ``--param`` that ``build_topology()`` does not take;
2. otherwise the module must hold exactly one module-level ``StormTopology``; its
   configuration is a module-level dict named ``conf`` if there is one.

Anything else is a one-line error. The code sent to Nimbus is a zip of every module
loaded from outside the Python installation, its site-packages and squall itself: the
file, its package, and the user's modules it imported. Workers import components from
that zip, since components are pickled by reference to their modules.
"""

from __future__ import annotations

import importlib
import inspect
import io
import site
import sys
import sysconfig
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import cloudpickle

from squall.api.errors import InvalidTopologyError
from squall.api.topology import StormTopology
from squall.client.exits import CliError, ExitCode


def module_name_for(path: Path) -> tuple[str, Path]:
    """(dotted module name, directory to put on ``sys.path``) for the file ``path``."""
    parts = [path.stem]
    root = path.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    name = ".".join(parts)
    if not all(p.isidentifier() for p in parts):
        raise CliError(ExitCode.USAGE, f"{path}: {name!r} is not an importable module name; "
                                       f"rename the file (letters, digits, underscores)")
    return name, root


def import_file(file: str) -> ModuleType:
    """Import ``file`` as a module (see the module docstring)."""
    path = Path(file).resolve()
    if not path.is_file():
        raise CliError(ExitCode.USAGE, f"no such file: {file}")
    if path.suffix != ".py":
        raise CliError(ExitCode.USAGE, f"{file} is not a Python file (.py)")
    name, root = module_name_for(path)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        return importlib.import_module(name)
    except InvalidTopologyError as e:
        raise CliError(ExitCode.ERROR, f"invalid topology in {file}: {e}") from None
    except Exception as e:  # noqa: BLE001 - the user's module can raise anything
        raise CliError(ExitCode.ERROR, f"cannot import {file}: {type(e).__name__}: {e}") from None


def _convert(file: str, name: str, annotation: Any, value: str) -> Any:
    # annotations are strings under ``from __future__ import annotations``: "int | None"
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    kinds = [k.strip() for k in text.replace("Optional[", "None|").rstrip("]").split("|")]
    if "None" in kinds and value in ("None", "null"):
        return None
    kinds = [k for k in kinds if k != "None"]
    kind = kinds[0] if len(kinds) == 1 else ""
    try:
        if kind == "bool":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except ValueError:
        raise CliError(ExitCode.USAGE, f"{file}: --param {name}={value}: build_topology() takes "
                                       f"{name} as {kind}") from None
    return value


def build_arguments(build: Any, file: str, params: dict[str, str]) -> dict[str, Any]:
    """The keyword arguments of ``build_topology`` from ``--param`` values (module docstring)."""
    try:
        signature = inspect.signature(build)
    except (TypeError, ValueError):
        return dict(params)
    takes = signature.parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in takes.values())
    named = {n: p for n, p in takes.items()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    unknown = sorted(k for k in params if k not in named)
    if unknown and not open_ended:
        known = ", ".join(named) or "none"
        raise CliError(ExitCode.USAGE, f"{file}: build_topology() takes no parameter {unknown[0]!r} "
                                       f"(its parameters: {known})")
    missing = [n for n, p in named.items() if p.default is inspect.Parameter.empty and n not in params]
    if missing:
        given = " ".join(f"--param {n}=VALUE" for n in missing)
        raise CliError(ExitCode.USAGE, f"{file}: build_topology() needs {', '.join(missing)}: give "
                                       f"{given}")
    return {k: _convert(file, k, named[k].annotation, v) if k in named else v for k, v in params.items()}


def find_topology(module: ModuleType, file: str,
                  params: dict[str, str] | None = None) -> tuple[dict, StormTopology]:
    """(conf, topology) from an imported module, by the rule of the module docstring."""
    build = getattr(module, "build_topology", None)
    if params and not callable(build):
        raise CliError(ExitCode.USAGE, f"{file}: --param needs a build_topology() to pass it to")
    if callable(build):
        kwargs = build_arguments(build, file, params or {})
        try:
            result = build(**kwargs)
        except InvalidTopologyError as e:
            raise CliError(ExitCode.ERROR, f"invalid topology in {file}: {e}") from None
        except Exception as e:  # noqa: BLE001 - the user's function can raise anything
            raise CliError(ExitCode.ERROR, f"{file}: build_topology() raised "
                                           f"{type(e).__name__}: {e}") from None
        if isinstance(result, StormTopology):
            return {}, result
        if (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], StormTopology)
                and (result[0] is None or isinstance(result[0], dict))):
            return dict(result[0] or {}), result[1]
        raise CliError(ExitCode.USAGE, f"{file}: build_topology() must return a StormTopology or "
                                       f"(conf, topology), not {type(result).__name__}")
    found = {k: v for k, v in vars(module).items() if isinstance(v, StormTopology)}
    if len(found) == 1:
        conf = getattr(module, "conf", None)
        return (dict(conf) if isinstance(conf, dict) else {}), next(iter(found.values()))
    if len(found) > 1:
        raise CliError(ExitCode.USAGE, f"{file} holds {len(found)} topologies ({', '.join(sorted(found))}); "
                                       f"define build_topology() to say which")
    raise CliError(ExitCode.USAGE, f"{file} defines no topology: add build_topology() returning a "
                                   f"StormTopology or (conf, topology), or a module-level StormTopology")


def load_topology(file: str, params: dict[str, str] | None = None) -> tuple[dict, StormTopology]:
    """Import ``file`` and find its topology (``params``: ``build_topology``'s, from ``--param``)."""
    return find_topology(import_file(file), file, params)


def _system_roots() -> list[Path]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             site.getusersitepackages(), *site.getsitepackages()}
    roots.update(p for p in sysconfig.get_paths().values() if p)
    # an editable squall is installed too: its package directory, two up from this file
    roots.add(str(Path(__file__).resolve().parents[1]))
    return [Path(r).resolve() for r in roots if r]


def user_modules() -> dict[str, ModuleType]:
    """Archive path -> module, for every loaded user module (see the module docstring)."""
    roots = _system_roots()
    out: dict[str, ModuleType] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py") or name == "__main__":
            continue
        path = Path(file).resolve()
        if not path.is_file() or any(path.is_relative_to(r) for r in roots):
            continue
        arc = name.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
        out[arc] = module
    return out


def package_code() -> tuple[bytes, list[ModuleType]]:
    """(zip of the user's modules, those modules)."""
    modules = user_modules()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        names = set(modules)
        for arc in sorted(modules):
            # a package's modules need its __init__ in the zip even if it has none on disk
            parts = arc.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                init = "/".join(parts[:i]) + "/__init__.py"
                if init not in names:
                    names.add(init)
                    zf.writestr(zipfile.ZipInfo(init, date_time=(1980, 1, 1, 0, 0, 0)), b"")
            data = Path(modules[arc].__file__).read_bytes()  # type: ignore[arg-type]
            zf.writestr(zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return buf.getvalue(), list(modules.values())


def pickle_topology(topology: StormTopology, modules: list[ModuleType]) -> bytes:
    """The topology pickled with the user's modules by value, so Nimbus can load it.

    Components are already bytes (pickled by reference at ``create_topology``); what this
    affects is the rest, such as custom groupings, which Nimbus unpickles to validate.
    """
    registered: list[Any] = []
    try:
        for m in modules:
            try:
                cloudpickle.register_pickle_by_value(m)
                registered.append(m)
            except ValueError:
                continue
        return cloudpickle.dumps(topology)
    finally:
        for m in registered:
            cloudpickle.unregister_pickle_by_value(m)
