"""``squall rebalance NAME [--workers N] [--parallelism C=N ...] [--wait SECS]``.

Spouts are deactivated, bolts drain for ``--wait`` seconds, and every worker restarts
under the new plan; spouts replay what was in flight, stateful bolts' state moves with
its keys.
"""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import LONG_TIMEOUT, client, key_values, name_argument, print_summary
from squall.cli.output import progress
from squall.client.exits import CliError, ExitCode


def positive(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("rebalance", parents=[common], help="change workers or parallelism")
    name_argument(p)
    p.add_argument("--workers", "-n", type=positive, metavar="N", help="the new worker count")
    p.add_argument("--parallelism", "-e", action="append", metavar="COMPONENT=N",
                   help="a component's new parallelism (repeatable)")
    p.add_argument("--wait", "-w", type=float, default=0.0, metavar="SECS",
                   help="seconds the bolts drain before the workers restart (default 0)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Rebalance; returns once the topology runs under the new plan."""
    parallelism = key_values(args.parallelism, "--parallelism")
    for cid, n in parallelism.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise CliError(ExitCode.USAGE, f"--parallelism {cid}: must be a positive integer, got {n!r}")
    if args.workers is None and not parallelism:
        raise CliError(ExitCode.USAGE, "give --workers N and/or --parallelism COMPONENT=N")
    body = {"workers": args.workers, "parallelism": parallelism, "wait_secs": args.wait}
    with progress(f"rebalancing {args.name!r}"):
        summary = client(args).post(f"/topologies/{args.name}/rebalance", body, timeout=LONG_TIMEOUT)
    print_summary(args, summary, f"topology {args.name!r} rebalanced")
    return 0
