"""``squall rollback NAME``: move the upgraded workers back to the previous version."""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import LONG_TIMEOUT, client, name_argument, print_summary
from squall.cli.output import progress


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("rollback", parents=[common], help="roll a gray upgrade back")
    name_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Roll the upgrade back."""
    with progress(f"rolling back {args.name!r}"):
        summary = client(args).post(f"/topologies/{args.name}/rollback", timeout=LONG_TIMEOUT)
    print_summary(args, summary, f"topology {args.name!r} rolled back: version {summary['version']}")
    return 0
