"""Loading a topology for the CLI from a Python file or a YAML (Flux) file.

A ``.yaml``/``.yml`` file is read by ``squall.flux.load_yaml`` with its directory first on
the import path, so ``className: mybolts.Split`` finds ``mybolts.py`` beside the file (as
Flux finds classes in the topology's jar). Anything else goes through ``load_topology``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from squall.client.exits import CliError, ExitCode

YAML_SUFFIXES = (".yaml", ".yml")


def is_yaml(file: str) -> bool:
    """True for a Flux file."""
    return Path(file).suffix.lower() in YAML_SUFFIXES


def load_yaml_file(file: str, filter_file: str | None, env_filter: bool) -> tuple[str, dict, object]:
    """(name, conf, topology) from a Flux file; a ``FluxError`` becomes one error line."""
    from squall.flux import FluxError, load_yaml

    path = Path(file)
    if not path.is_file():
        raise CliError(ExitCode.USAGE, f"no such file: {file}")
    root = str(path.resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        spec = load_yaml(file, properties=filter_file, env=env_filter)
    except FluxError as e:
        raise CliError(ExitCode.ERROR, str(e)) from None
    return spec.name, dict(spec.conf), spec.topology


def add_yaml_options(p: argparse.ArgumentParser) -> None:
    """The options of a YAML topology (Flux's --filter and --env-filter)."""
    p.add_argument("--filter", metavar="FILE.properties",
                   help="YAML: replace ${name} with the values of this properties file")
    p.add_argument("--env-filter", action="store_true",
                   help="YAML: replace ${ENV-NAME} with environment variables")


def load_any(file: str, filter_file: str | None = None,
             env_filter: bool = False) -> tuple[str, dict, object]:
    """(default name, conf, topology) from a YAML or a Python file."""
    if is_yaml(file):
        return load_yaml_file(file, filter_file, env_filter)
    from squall.client.loader import load_topology

    conf, topology = load_topology(file)
    return Path(file).stem, conf, topology


def describe(name: str, conf: dict, topology: object) -> str:
    """The plan ``--dry-run`` prints."""
    from squall.flux.plan import describe as plan

    return plan(name, conf, topology)  # type: ignore[arg-type]
