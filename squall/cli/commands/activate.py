"""``squall activate NAME``: activate the spouts (next_tuple resumes)."""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import client, name_argument, print_summary


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("activate", parents=[common], help="activate the spouts (next_tuple resumes)")
    name_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Activate the topology's spouts."""
    summary = client(args).post(f"/topologies/{args.name}/activate")
    print_summary(args, summary, f"topology {args.name!r} activated")
    return 0
