"""Loading a topology for the CLI from a Python file or a YAML (Flux) file.

A ``.yaml``/``.yml`` file is read by ``squall.flux.load_yaml`` with its directory first on
the import path, so ``className: mybolts.Split`` finds ``mybolts.py`` beside the file (as
Flux finds classes in the topology's jar), then the current directory, so that
``className: examples.word_count.Split`` works from the directory holding ``examples/``, as
under ``python -m``. Anything else goes through ``load_topology``.

``--param KEY=VALUE`` gives the topology its parameters: for a Python file, keyword
arguments of ``build_topology()``; for a YAML file, values of ``${KEY}``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from squall.client.exits import CliError, ExitCode

YAML_SUFFIXES = (".yaml", ".yml")


def is_yaml(file: str) -> bool:
    """True for a Flux file."""
    return Path(file).suffix.lower() in YAML_SUFFIXES


def on_path(directory: str) -> None:
    """Put ``directory`` on the import path, where ``python -m`` puts the current directory.

    The ``squall`` console script has its own directory first instead, so without this the
    user's packages next to where they run it could not be imported.
    """
    if directory not in sys.path and "" not in sys.path:
        sys.path.insert(0, directory)


def load_yaml_file(file: str, filter_file: str | None, env_filter: bool,
                   params: dict[str, str] | None = None) -> tuple[str, dict, object]:
    """(name, conf, topology) from a Flux file; a ``FluxError`` becomes one error line."""
    from squall.flux import FluxError, load_yaml

    path = Path(file)
    if not path.is_file():
        raise CliError(ExitCode.USAGE, f"no such file: {file}")
    root = str(path.resolve().parent)
    on_path(os.getcwd())
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        spec = load_yaml(file, properties=filter_file, env=env_filter, params=params)
    except FluxError as e:
        raise CliError(ExitCode.ERROR, str(e)) from None
    return spec.name, dict(spec.conf), spec.topology


def add_yaml_options(p: argparse.ArgumentParser) -> None:
    """The options of a topology file: ``--param``, and a YAML's (Flux's --filter and --env-filter)."""
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a parameter of the topology (repeatable): a keyword argument of the .py "
                        "file's build_topology(), or the value of ${KEY} in a .yaml file")
    p.add_argument("--filter", metavar="FILE.properties",
                   help="YAML: replace ${name} with the values of this properties file")
    p.add_argument("--env-filter", action="store_true",
                   help="YAML: replace ${ENV-NAME} with environment variables")


def parse_params(items: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` from ``--param`` as a dict of strings.

    >>> parse_params(["bootstrap=k1:9092", "topic=a=b"])
    {'bootstrap': 'k1:9092', 'topic': 'a=b'}
    """
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(ExitCode.USAGE, f"--param takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def load_any(file: str, filter_file: str | None = None, env_filter: bool = False,
             params: dict[str, str] | None = None) -> tuple[str, dict, object]:
    """(default name, conf, topology) from a YAML or a Python file."""
    if is_yaml(file):
        return load_yaml_file(file, filter_file, env_filter, params)
    from squall.client.loader import load_topology

    if filter_file or env_filter:
        raise CliError(ExitCode.USAGE, f"--filter and --env-filter are for .yaml files; give {file} "
                                       f"its parameters with --param KEY=VALUE")
    on_path(os.getcwd())
    conf, topology = load_topology(file, params)
    return Path(file).stem, conf, topology


def describe(name: str, conf: dict, topology: object) -> str:
    """The plan ``--dry-run`` prints."""
    from squall.flux.plan import describe as plan

    return plan(name, conf, topology)  # type: ignore[arg-type]
