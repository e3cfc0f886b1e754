"""``squall debug NAME [COMPONENT] --sample 0.01`` / ``--off``: sample emitted tuples (Storm's event logger).

Turns sampling on or off without a restart: a share of the tuples the topology's components
(or one of them) emit is kept, with component, stream, worker, values and time, for
``squall samples`` and the UI. Off by default; when off an emit costs nothing more.
"""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import client, name_argument
from squall.cli.output import print_json
from squall.client.exits import CliError, ExitCode


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("debug", parents=[common], help="sample the tuples a topology emits (or stop)")
    name_argument(p)
    p.add_argument("component", nargs="?", metavar="COMPONENT", help="only this component's tuples")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--sample", type=float, metavar="FRACTION", help="share of tuples kept, 0 to 1 "
                                                                        "(0.01 is 1%%)")
    group.add_argument("--off", action="store_true", help="stop sampling")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Ask Nimbus to change the sampling."""
    sample = 0.0 if args.off else args.sample
    if not 0.0 <= sample <= 1.0:
        raise CliError(ExitCode.USAGE, f"--sample must be a fraction from 0 to 1, got {sample}")
    body = {"sample": sample, "component": args.component}
    result = client(args).post(f"/topologies/{args.name}/debug", body)
    if args.json:
        print_json(result)
    elif result["debug"]:
        which = f"component {args.component!r}" if args.component else "every component"
        print(f"sampling {100 * sample:g}% of the tuples {which} of {args.name!r} emits "
              f"(squall samples {args.name})")
    else:
        print(f"sampling of {args.name!r} is off")
    return 0
