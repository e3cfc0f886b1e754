"""``squall version``: the version of squall, its hot path (and the Nimbus reached, if any)."""

from __future__ import annotations

import argparse

import squall
from squall import _speedups
from squall.cli.commands._shared import client
from squall.cli.output import print_json
from squall.client.exits import CliError


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("version", parents=[common], help="print versions")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print this squall's version and hot path, and the Nimbus's version when one answers."""
    from squall.cli.main import version_line

    try:
        nimbus = client(args).get("/health", timeout=3.0)
    except CliError:
        nimbus = None
    if args.json:
        print_json({"squall": squall.__version__, "hot_path": _speedups.STATE, "nimbus": nimbus})
        return 0
    print(version_line())
    if nimbus:
        role = "leader" if nimbus["leader"] else "standby"
        print(f"nimbus {nimbus['version']} at {nimbus['url']} ({role})")
    return 0
