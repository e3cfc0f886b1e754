"""``squall``: the command line of squall (Storm's verbs; see docs/nimbus.md).

Each command is a module of ``squall.cli.commands`` with ``add_parser(subparsers,
common)`` and ``run(args) -> int``. Every error ends the command with one line on stderr
and an exit code of ``squall.client.exits``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import NoReturn

from squall.client.exits import CliError, ExitCode

COMMANDS = ("nimbus", "submit", "local", "list", "info", "kill", "activate", "deactivate", "rebalance",
            "upgrade", "complete_upgrade", "rollback", "errors", "logs", "debug", "samples", "ui", "drpc",
            "drpc_call", "version")


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` as one line and exit with ``ExitCode.USAGE``."""
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(ExitCode.USAGE)


def common_options() -> argparse.ArgumentParser:
    """Options every command takes (also accepted after the command's name)."""
    common = Parser(add_help=False)
    common.add_argument("--nimbus", default=argparse.SUPPRESS, metavar="URL",
                        help="Nimbus URL(s), comma-separated (default $SQUALL_NIMBUS or "
                             "http://127.0.0.1:6627)")
    common.add_argument("--token-file", default=argparse.SUPPRESS, metavar="PATH",
                        help="the Nimbus token file (default $SQUALL_TOKEN_FILE, else "
                             "$SQUALL_HOME/nimbus.token); $SQUALL_TOKEN, if set, wins: it holds "
                             "the token itself")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON for scripts instead of tables")
    return common


class _Version(argparse.Action):
    """``--version``: one unwrapped line (argparse's own action wraps it to the terminal)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        """Print the version line and exit 0."""
        print(version_line())
        parser.exit(0)


def version_line() -> str:
    """``squall X.Y.Z (hot path: compiled|plain Python (why); Python X.Y.Z)``."""
    import platform

    import squall
    from squall import _speedups

    python = platform.python_version()
    return f"squall {squall.__version__} (hot path: {_speedups.describe()}; Python {python})"


def build_parser() -> Parser:
    """The parser of every command."""
    common = common_options()
    parser = Parser(prog="squall", parents=[common],
                    description="squall: JStorm's real-time computation model on Apache Spark.",
                    epilog="exit codes: 0 ok, 1 error, 2 usage, 3 Nimbus unreachable, 4 not found, "
                           "5 conflict, 6 token missing or wrong")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print squall's version and which hot path runs, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"squall.cli.commands.{name}").add_parser(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for key, default in (("nimbus", None), ("token_file", None), ("json", False)):
        if not hasattr(args, key):
            setattr(args, key, default)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.run(args))
    except CliError as e:
        sys.stderr.write(f"squall {args.command}: {e}\n")
        return int(e.code)
    except KeyboardInterrupt:
        sys.stderr.write(f"squall {args.command}: interrupted\n")
        return int(ExitCode.ERROR)


if __name__ == "__main__":
    sys.exit(main())
