"""``squall samples NAME [COMPONENT] [--follow]``: the tuples sampled while debugging is on.

Needs the Nimbus token (the values are the topology's data). See ``squall debug``.
"""

from __future__ import annotations

import argparse
import json
import time

from squall.cli.commands._shared import client, name_argument
from squall.cli.output import print_json


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("samples", parents=[common], help="print sampled tuples (needs the token)")
    name_argument(p)
    p.add_argument("component", nargs="?", metavar="COMPONENT", help="only this component's tuples")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new samples until interrupted")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECS", help="how often --follow asks")
    p.set_defaults(run=run)


def line(sample: dict) -> str:
    """One sample as a line: time, component, stream, emitting task, worker, values."""
    t = sample["time"]
    when = time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"
    values = json.dumps(sample["values"], ensure_ascii=False, default=str)
    return (f"{when}  {sample['component']}  {sample['stream']}  task {sample.get('task', '-')}  "
            f"worker {sample['worker']}  {values}")


def run(args: argparse.Namespace) -> int:
    """Print the samples kept, then new ones with ``--follow``."""
    nimbus = client(args)
    query = f"&component={args.component}" if args.component else ""
    page = nimbus.get(f"/topologies/{args.name}/samples?since=0{query}", auth=True)
    if args.json and not args.follow:
        print_json(page)
        return 0
    if not page["debug"] and not page["samples"]:
        print(f"no samples: sampling of {args.name!r} is off (squall debug {args.name} --sample 0.01)")
    for sample in page["samples"]:
        print(line(sample), flush=True)
    while args.follow:
        time.sleep(args.interval)
        page = nimbus.get(f"/topologies/{args.name}/samples?since={page['last']}{query}", auth=True)
        for sample in page["samples"]:
            print(line(sample), flush=True)
    return 0
