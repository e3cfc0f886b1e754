"""``squall complete-upgrade NAME``: move the remaining workers to the new version."""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import LONG_TIMEOUT, client, name_argument, print_summary
from squall.cli.output import progress


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("complete-upgrade", parents=[common], help="finish a gray upgrade")
    name_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Complete the upgrade."""
    with progress(f"completing the upgrade of {args.name!r}"):
        summary = client(args).post(f"/topologies/{args.name}/complete-upgrade", timeout=LONG_TIMEOUT)
    print_summary(args, summary, f"topology {args.name!r} upgraded: version {summary['version']}")
    return 0
