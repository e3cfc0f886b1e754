"""``squall ui``: where the web UI is (Storm's ``storm ui``; here Nimbus serves the UI itself).

Asks the Nimbus URLs given (``--nimbus``, ``$SQUALL_NIMBUS``) which one leads, prints the
leader's UI address, and with ``--open`` opens it in the desktop's browser. The leader's
address comes from the store's leader record, which whoever can write the store can forge:
it is printed or opened only if it is one of the URLs given (the rule the client follows
before sending the token anywhere), else the command names both and stops with exit 3, since
a look-alike page could ask for the token.
"""

from __future__ import annotations

import argparse
import webbrowser
from urllib.parse import urlsplit, urlunsplit

from squall.cli.commands._shared import client
from squall.cli.output import print_json
from squall.cli.terminal import printable
from squall.client.exits import CliError, ExitCode


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("ui", parents=[common], help="print (or --open) the web UI's address")
    p.add_argument("--open", action="store_true", help="open it in a browser")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the UI's URL, the REST API's and the metrics endpoint's."""
    nimbus = client(args)
    health = nimbus.get("/health")
    base = str(health.get("leader_url") or health["url"]).rstrip("/")
    if not trusted_url(base, nimbus.urls):
        raise CliError(ExitCode.UNREACHABLE, printable(
            f"the leader's URL {base} (from the store's leader record) is not one of the configured "
            f"Nimbus URLs ({', '.join(nimbus.urls)}); not shown or opened: add it to --nimbus or "
            f"$SQUALL_NIMBUS if it is yours"))
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


def trusted_url(url: str, trusted: list[str]) -> bool:
    """Whether ``url`` is one of ``trusted`` (scheme and host without case, no trailing slash).

    >>> trusted_url("HTTP://Nimbus:6627/", ["http://nimbus:6627"])
    True
    >>> trusted_url("http://look-alike.example:6627", ["http://nimbus:6627"])
    False
    """
    return _normal(url) in {_normal(u) for u in trusted}


def _normal(url: str) -> str:
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))
