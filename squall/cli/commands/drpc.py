"""``squall drpc``: run the DRPC server (Storm's ``storm drpc``).

Binds 127.0.0.1:3772 unless told otherwise. Every call needs the token kept in
``--drpc-token-file`` (else ``$SQUALL_DRPC_TOKEN``, else ``$SQUALL_HOME/drpc.token``,
created with mode 0600 when missing); the token itself is never printed or logged.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from squall.cli.commands._shared import key_values
from squall.client.exits import CliError, ExitCode
from squall.drpc.client import default_token_file

TIMEOUT_KEY = "drpc.request.timeout.secs"
PORT_KEY = "drpc.port"
HOSTS_KEY = "drpc.http.allowed.hosts"


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("drpc", help="run the DRPC server",
                       description="Run the DRPC server: clients call functions that topologies "
                                   "built with LinearDRPCTopologyBuilder answer.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default drpc.port, 3772)")
    p.add_argument("--drpc-token-file", "--token-file", dest="drpc_token_file", default=None,
                   metavar="PATH",
                   help="the token file (default $SQUALL_DRPC_TOKEN, else $SQUALL_HOME/drpc.token, "
                        "created if missing)")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help=f"{PORT_KEY} (3772), {TIMEOUT_KEY} (600) or {HOSTS_KEY} (comma-separated Host "
                        "names answered beyond the bound address; others get 421)")
    p.add_argument("--log-level", default=os.environ.get("SQUALL_LOG_LEVEL", "INFO"))
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT."""
    from squall.drpc.server import DEFAULT_PORT, DRPCServer, load_or_create_token

    logging.getLogger().setLevel(args.log_level.upper())
    conf = key_values(args.conf, "--conf")
    unknown = sorted(set(conf) - {TIMEOUT_KEY, PORT_KEY, HOSTS_KEY})
    if unknown:
        raise CliError(ExitCode.USAGE,
                       f"unknown --conf key {unknown[0]!r} (known: {PORT_KEY}, {TIMEOUT_KEY}, {HOSTS_KEY})")
    try:
        port = args.port if args.port is not None else int(conf.get(PORT_KEY, DEFAULT_PORT))
        timeout = float(conf.get(TIMEOUT_KEY, 600))
        allowed = tuple(h.strip() for h in str(conf.get(HOSTS_KEY, "")).split(",") if h.strip())
    except ValueError as e:
        raise CliError(ExitCode.USAGE, f"--conf: {e}") from None
    token_file = Path(args.drpc_token_file) if args.drpc_token_file else default_token_file()
    from_env = args.drpc_token_file is None and bool(os.environ.get("SQUALL_DRPC_TOKEN"))
    where = "$SQUALL_DRPC_TOKEN" if from_env else str(token_file)
    try:
        token = os.environ["SQUALL_DRPC_TOKEN"] if from_env else load_or_create_token(token_file)
        server = DRPCServer(token, host=args.host, port=port, timeout_secs=timeout, allowed_hosts=allowed)
    except (OSError, ValueError) as e:
        raise CliError(ExitCode.ERROR, str(e)) from None

    stopping = threading.Event()
    stopper = threading.Thread(target=server.stop, name="squall-drpc-stop", daemon=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        # not an exception raised wherever the main thread happens to be (it could land inside
        # the server's own bookkeeping): the serving loop is asked to end, from another thread
        # since ``shutdown`` waits for the loop
        if not stopping.is_set():
            stopping.set()
            stopper.start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write(f"squall drpc: listening on {server.host!s}:{server.port} "
                     f"(token in {where}; requests time out after {timeout:g} s)\n")
    sys.stderr.flush()
    server.serve_forever()
    stopper.join()  # outstanding requests failed, the port closed
    return 0
