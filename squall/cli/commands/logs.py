"""``squall logs NAME [--worker N] [--follow]``: a topology's log, as Storm's logviewer shows it.

The lines come from the Nimbus that launched the topology (its master's log, where in local
mode the workers log too); ``--worker`` keeps one worker's lines. Reading logs needs the
Nimbus token, since components may log what they process; for the same reason terminal
control characters in the lines are printed escaped (``squall.cli.terminal``).
"""

from __future__ import annotations

import argparse
import sys
import time

from squall.cli.commands._shared import client, name_argument
from squall.cli.output import print_json
from squall.cli.terminal import printable


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("logs", parents=[common], help="print a topology's log (needs the token)")
    name_argument(p)
    p.add_argument("--worker", type=int, metavar="N", help="only worker N's lines")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new lines until interrupted")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECS", help="how often --follow asks")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the log's last lines, then new ones with ``--follow``."""
    nimbus = client(args)
    query = f"?worker={args.worker}" if args.worker is not None else ""
    page = nimbus.get(f"/topologies/{args.name}/logs{query}", auth=True)
    if args.json and not args.follow:
        print_json(page)
        return 0
    sys.stdout.write(printable(page["text"]))
    sys.stdout.flush()
    while args.follow:
        time.sleep(args.interval)
        sep = "&" if query else "?"
        page = nimbus.get(f"/topologies/{args.name}/logs{query}{sep}offset={page['offset']}", auth=True)
        sys.stdout.write(printable(page["text"]))
        sys.stdout.flush()
    return 0
