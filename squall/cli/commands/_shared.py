"""Helpers the commands share: the client, ``k=v`` options, printing a topology summary."""

from __future__ import annotations

import argparse
import json
from typing import Any

from squall.cli.output import duration, print_json, table
from squall.client.exits import CliError, ExitCode
from squall.client.nimbus import NimbusClient, nimbus_urls, read_token

LONG_TIMEOUT = 900.0  # submits, kills and upgrades wait for Nimbus, which has its own bounds


def client(args: argparse.Namespace) -> NimbusClient:
    """A Nimbus client from the common options."""
    return NimbusClient(nimbus_urls(args.nimbus), read_token(args.token_file))


def key_values(items: list[str] | None, what: str) -> dict[str, Any]:
    """``["k=v", ...]`` as a dict; values are JSON when they parse as JSON, else strings.

    >>> key_values(["topology.workers=2", "x=abc"], "--conf")
    {'topology.workers': 2, 'x': 'abc'}
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise CliError(ExitCode.USAGE, f"{what} takes KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def name_argument(parser: argparse.ArgumentParser) -> None:
    """The topology NAME positional."""
    parser.add_argument("name", metavar="NAME", help="the topology's name")


def print_summary(args: argparse.Namespace, summary: dict, done: str) -> None:
    """A one-topology result: JSON, or ``done`` and one table row."""
    if args.json:
        print_json(summary)
        return
    print(done)
    print(summary_table([summary]))


def summary_table(rows: list[dict]) -> str:
    """The ``list`` table."""
    body = []
    for r in rows:
        up = r.get("upgrade")
        upgrade = f"v{up['from']}->v{up['to']} on {len(up['workers'])}" if up else "-"
        body.append([r["name"], r["status"], r["version"], r.get("num_workers"), r.get("num_tasks"),
                     duration(r.get("uptime_secs")), r.get("acked"), r.get("failed"), r.get("num_errors"),
                     r.get("master"), upgrade])
    return table(["NAME", "STATUS", "VERSION", "WORKERS", "TASKS", "UPTIME", "ACKED", "FAILED", "ERRORS",
                  "MASTER", "UPGRADE"], body)
