"""``squall list``: every topology, its status, version, workers and upgrade."""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import client, summary_table
from squall.cli.output import print_json


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("list", parents=[common], help="list the topologies")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the topologies."""
    rows = client(args).get("/topologies")["topologies"]
    if args.json:
        print_json(rows)
    elif rows:
        print(summary_table(rows))
    else:
        print("no topologies running")
    return 0
