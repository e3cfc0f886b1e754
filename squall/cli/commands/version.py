"""``squall version``: the version of squall (and of the Nimbus reached, if any)."""

from __future__ import annotations

import argparse

import squall
from squall.cli.commands._shared import client
from squall.cli.exits import CliError
from squall.cli.output import print_json


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("version", parents=[common], help="print versions")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print this squall's version, and the Nimbus's when one answers."""
    try:
        nimbus = client(args).get("/health", timeout=3.0)
    except CliError:
        nimbus = None
    if args.json:
        print_json({"squall": squall.__version__, "nimbus": nimbus})
        return 0
    print(f"squall {squall.__version__}")
    if nimbus:
        role = "leader" if nimbus["leader"] else "standby"
        print(f"nimbus {nimbus['version']} at {nimbus['url']} ({role})")
    return 0
