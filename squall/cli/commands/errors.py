"""``squall errors NAME``: the errors a topology's components reported, with tracebacks.

Messages and tracebacks hold tuple values: terminal control characters in them are printed
escaped (``squall.cli.terminal``); ``--json`` escapes them as JSON does.
"""

from __future__ import annotations

import argparse
import time

from squall.cli.commands._shared import client, name_argument
from squall.cli.output import print_json
from squall.cli.terminal import printable


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("errors", parents=[common], help="show a topology's errors")
    name_argument(p)
    p.add_argument("--traceback", action="store_true", help="print each error's traceback")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the errors, oldest first."""
    errors = client(args).get(f"/topologies/{args.name}/errors")["errors"]
    if args.json:
        print_json(errors)
        return 0
    if not errors:
        print(f"no errors reported by {args.name!r}")
    for e in errors:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["time"]))
        print(printable(f"{when}  {e['component']} task {e['task']}: {e['message']}"))
        if args.traceback:
            print(printable(str(e.get("traceback") or "").rstrip()))
    return 0
