"""``squall ui``: where the web UI is (Storm's ``storm ui``; here Nimbus serves the UI itself).

Asks the Nimbus URLs given (``--nimbus``, ``$SQUALL_NIMBUS``) which one leads, prints the
leader's UI address, and with ``--open`` opens it in the desktop's browser.
"""

from __future__ import annotations

import argparse
import webbrowser

from squall.cli.commands._shared import client
from squall.cli.output import print_json


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("ui", parents=[common], help="print (or --open) the web UI's address")
    p.add_argument("--open", action="store_true", help="open it in a browser")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the UI's URL, the REST API's and the metrics endpoint's."""
    health = client(args).get("/health")
    base = (health.get("leader_url") or health["url"]).rstrip("/")
    urls = {"ui": f"{base}/", "api": f"{base}/api/v1/", "openapi": f"{base}/api/v1/openapi.json",
            "metrics": f"{base}/metrics"}
    if args.json:
        print_json(urls)
    else:
        print(f"squall UI:  {urls['ui']}\nREST API:   {urls['api']} ({urls['openapi']})\n"
              f"Prometheus: {urls['metrics']}")
    if args.open:
        webbrowser.open(urls["ui"])
    return 0
