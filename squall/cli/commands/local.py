"""``squall local FILE --seconds N``: run a topology on a LocalCluster in this process.

FILE is a Python file (as for ``squall submit``) or a YAML topology (Flux); after N
seconds the command prints what each component did and kills the topology, as Flux's
``--local --sleep``.
"""

from __future__ import annotations

import argparse

from squall.cli.commands.submit import prepare, run_local
from squall.cli.topology_file import add_yaml_options


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("local", parents=[common],
                       help="run a topology (Python or YAML file) on a LocalCluster for a while")
    p.add_argument("file", metavar="FILE", help="a .py topology file or a .yaml topology (Flux)")
    p.add_argument("--seconds", type=float, default=10.0, metavar="N",
                   help="how long to run it (default 10)")
    p.add_argument("--name", help="the topology's name (default: the YAML's name or the file's name)")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="override a config key")
    add_yaml_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Load, run for ``--seconds``, report, kill."""
    name, conf, topology = prepare(args.file, args.name, args.conf, args.filter, args.env_filter, args.param)
    return run_local(name, conf, topology, args.seconds, args.json)
