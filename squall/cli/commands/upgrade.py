"""``squall upgrade NAME [FILE]``: hot deploy, gray upgrade, or its next batch.

Without a selector the new code and configuration replace the running ones (state kept,
spouts replay). With ``--workers host:port,...`` (or worker numbers), ``--component C
[--worker-num N]`` or ``--worker-num N`` (or the same in FILE's configuration:
``topology.upgrade.workers``, ``topology.upgrade.component``, ``topology.upgrade.worker.num``)
only those workers move to the new version, which runs under the running topology's shape
(its worker count and parallelism) and must have its components, groupings and streams.
While that gray upgrade is open, ``squall upgrade NAME --worker-num N`` (no FILE, or the
same FILE) moves N more; finish with ``complete-upgrade NAME`` or undo with
``rollback NAME``.
"""

from __future__ import annotations

import argparse

from squall.cli.commands._shared import LONG_TIMEOUT, client, name_argument, print_summary
from squall.cli.commands.rebalance import positive
from squall.cli.commands.submit import prepare, upload_body
from squall.cli.output import progress
from squall.cli.topology_file import add_yaml_options, describe
from squall.client.exits import CliError, ExitCode


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("upgrade", parents=[common], help="hot deploy or gray upgrade a topology")
    name_argument(p)
    p.add_argument("file", metavar="FILE", nargs="?",
                   help="the new version: a .py file or a .yaml topology (Flux); none: the next batch "
                        "of the open gray upgrade")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="override a config key")
    add_yaml_options(p)
    p.add_argument("--workers", metavar="HOST:PORT,...", help="gray: upgrade these workers")
    p.add_argument("--component", metavar="C", help="gray: upgrade the workers running component C")
    p.add_argument("--worker-num", type=positive, metavar="N", help="gray: upgrade N workers")
    p.add_argument("--wait", "-w", type=float, default=0.0, metavar="SECS",
                   help="hot deploy: seconds the bolts drain before the old version stops")
    p.add_argument("--dry-run", action="store_true",
                   help="check the new version and print its plan without upgrading")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Upgrade; returns once the new version runs where it should."""
    body: dict = {}
    if args.dry_run and not args.file:
        raise CliError(ExitCode.USAGE, "--dry-run checks a new version: give its FILE")
    if args.file:
        _, conf, topology = prepare(args.file, args.name, args.conf, args.filter, args.env_filter,
                                    args.param)
        if args.dry_run:
            from squall.runtime.submission import prepare_conf

            print(describe(args.name, prepare_conf(conf, topology), topology))
            return 0
        body = upload_body(conf, topology)
    gray = {}
    if args.workers:
        gray["workers"] = [w.strip() for w in args.workers.split(",") if w.strip()]
    if args.component:
        gray["component"] = args.component
    if args.worker_num is not None:
        gray["worker_num"] = args.worker_num
    if gray:
        body["gray"] = gray
    else:
        body["wait_secs"] = args.wait
    kind = "gray upgrade" if gray or not args.file else "upgrade"
    with progress(f"{kind} of {args.name!r}"):
        summary = client(args).post(f"/topologies/{args.name}/upgrade", body, timeout=LONG_TIMEOUT)
    up = summary.get("upgrade")
    done = (f"topology {args.name!r}: workers {up['workers']} run version {up['to']}; "
            f"upgrade --worker-num N for more, complete-upgrade or rollback to finish") if up else (
            f"topology {args.name!r} now runs version {summary['version']}")
    print_summary(args, summary, done)
    return 0
