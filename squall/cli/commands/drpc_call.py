"""``squall drpc-call FUNCTION ARGS``: call a DRPC function and print its result."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from squall.client.exits import CliError, ExitCode
from squall.drpc.client import default_token_file


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("drpc-call", help="call a DRPC function",
                       description="Call FUNCTION with ARGS on a DRPC server and print the result.")
    p.add_argument("function")
    p.add_argument("args")
    p.add_argument("--server", default="127.0.0.1:3772", metavar="HOST:PORT",
                   help="the DRPC server (default 127.0.0.1:3772)")
    p.add_argument("--drpc-token-file", "--token-file", dest="drpc_token_file", default=None,
                   metavar="PATH",
                   help="the token file (default $SQUALL_DRPC_TOKEN, else $SQUALL_HOME/drpc.token)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECS",
                   help="give up after SECS (default: the server's drpc.request.timeout.secs)")
    p.set_defaults(run=run)


def _token(args: argparse.Namespace) -> str:
    if args.drpc_token_file is None and os.environ.get("SQUALL_DRPC_TOKEN"):
        return os.environ["SQUALL_DRPC_TOKEN"]
    path = Path(args.drpc_token_file) if args.drpc_token_file else default_token_file()
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise CliError(ExitCode.AUTH,
                       f"cannot read the DRPC token file {str(path)!r}: {e.strerror}") from None
    if not token:
        raise CliError(ExitCode.AUTH, f"the DRPC token file {str(path)!r} is empty")
    return token


def run(args: argparse.Namespace) -> int:
    """Call the function; print the result, or the reason it failed."""
    from squall.drpc import DRPCAuthorizationError, DRPCClient, DRPCExecutionError

    host, _, port = args.server.rpartition(":")
    if not host or not port.isdigit():
        raise CliError(ExitCode.USAGE, f"--server {args.server!r}: expected HOST:PORT")
    client = DRPCClient(host, int(port), token=_token(args))
    try:
        print(client.execute(args.function, args.args, timeout=args.timeout))
    except DRPCAuthorizationError as e:
        raise CliError(ExitCode.AUTH, str(e)) from None
    except DRPCExecutionError as e:
        code = ExitCode.UNREACHABLE if e.type == "UNREACHABLE" else ExitCode.ERROR
        raise CliError(code, f"{e} ({e.type})") from None
    return 0
