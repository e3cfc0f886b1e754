"""``squall deactivate NAME``: deactivate the spouts (next_tuple stops; bolts drain)."""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import client, name_argument, print_summary


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("deactivate", parents=[common], help="deactivate the spouts (bolts drain)")
    name_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Deactivate the topology's spouts."""
    summary = client(args).post(f"/topologies/{args.name}/deactivate")
    print_summary(args, summary, f"topology {args.name!r} deactivated")
    return 0
