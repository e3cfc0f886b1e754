"""``squall kill NAME [--wait SECS]``: deactivate, wait, then stop and remove a topology."""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import LONG_TIMEOUT, client, name_argument
from squall.cli.output import print_json, progress


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("kill", parents=[common], help="kill a topology")
    name_argument(p)
    p.add_argument("--wait", "-w", type=float, metavar="SECS",
                   help="seconds between deactivating and stopping (default: its message timeout)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Kill the topology; returns once it has stopped."""
    body = {} if args.wait is None else {"wait_secs": args.wait}
    with progress(f"killing {args.name!r}"):
        result = client(args).post(f"/topologies/{args.name}/kill", body, timeout=LONG_TIMEOUT)
    if args.json:
        print_json(result)
    else:
        print(f"topology {args.name!r} killed")
    return 0
