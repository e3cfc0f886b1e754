"""``squall nimbus``: run the Nimbus daemon (REST API, store, launching topologies)."""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import replace
from pathlib import Path

from squall.cli.commands._shared import key_values
from squall.client.exits import CliError, ExitCode
from squall.nimbus import clusterconf
from squall.nimbus.config import CONF_KEYS, DEFAULT_PORT, NimbusConfig, squall_home, with_conf


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    keys = "; ".join(f"{k}: {doc}" for k, (_, doc) in sorted(CONF_KEYS.items()))
    p = sub.add_parser("nimbus", parents=[common], help="run Nimbus",
                       description=f"Run Nimbus. --conf keys: {keys}.")
    p.add_argument("--host", default=None,
                   help="address to bind (default nimbus.bind.host of the cluster file, else 127.0.0.1)")
    p.add_argument("--port", type=int, default=None,
                   help=f"port (default nimbus.thrift.port of the cluster file, else {DEFAULT_PORT})")
    p.add_argument("--data-dir", default=None,
                   help="store, blobs, token and logs (default $SQUALL_HOME or ~/.squall)")
    p.add_argument("--store", default=None,
                   help="sqlite:PATH (default <data dir>/nimbus.sqlite3) or zk://host:port/root")
    p.add_argument("--zk-auth", default=os.environ.get("SQUALL_ZK_AUTH"), metavar="USER:PASSWORD|@FILE",
                   help="authenticate to ZooKeeper (digest) and put an ACL of that identity on every "
                        "znode; @FILE reads the credential from a file (default $SQUALL_ZK_AUTH)")
    p.add_argument("--tls-cert", default=None, metavar="PEM",
                   help="serve HTTPS only, with this certificate chain (needs --tls-key)")
    p.add_argument("--tls-key", default=None, metavar="PEM", help="the private key of --tls-cert")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE|FILE",
                   help="a Nimbus setting, or the cluster configuration file (squall.yaml, Storm's "
                        "storm.yaml; default $SQUALL_CONF, else ~/.squall/squall.yaml if present)")
    p.add_argument("--log-level", default=os.environ.get("SQUALL_LOG_LEVEL", "INFO"))
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run Nimbus until SIGTERM or SIGINT."""
    from squall.nimbus.auth import TokenError
    from squall.nimbus.daemon import run_nimbus  # the daemon's imports only where needed
    from squall.store import StoreError

    logging.getLogger().setLevel(args.log_level.upper())
    for handler in logging.getLogger().handlers:
        handler.setFormatter(logging.Formatter(f"%(asctime)s squall nimbus pid {os.getpid()} "
                                               f"%(levelname)s %(name)s: %(message)s"))
    from squall.nimbus.notifier import NotifierError

    zk_auth = None
    if args.zk_auth:
        from squall.store.zookeeper import read_auth
        try:
            zk_auth = read_auth(args.zk_auth)
        except ValueError as e:
            raise CliError(ExitCode.USAGE, f"--zk-auth: {e}") from None
    config = NimbusConfig(port=DEFAULT_PORT, store=args.store, zk_auth=zk_auth,
                          data_dir=Path(args.data_dir) if args.data_dir else squall_home(),
                          tls_cert=Path(args.tls_cert) if args.tls_cert else None,
                          tls_key=Path(args.tls_key) if args.tls_key else None)
    files = [c for c in args.conf or [] if "=" not in c]
    if len(files) > 1:
        raise CliError(ExitCode.USAGE, f"--conf names {len(files)} files ({', '.join(files)}); give one")
    path = Path(files[0]) if files else clusterconf.default_path(squall_home())
    cluster = clusterconf.ClusterConf()
    if path is not None:
        try:
            cluster = clusterconf.read(path, set(CONF_KEYS))
        except clusterconf.ClusterConfError as e:
            raise CliError(ExitCode.USAGE, str(e)) from None
    pairs = {k: str(v) for k, v in cluster.nimbus.items()}  # the command line wins over the file
    if cluster.port is not None:
        pairs["nimbus.thrift.port"] = str(cluster.port)
    pairs.update({k: str(v) for k, v in key_values([c for c in args.conf or [] if "=" in c],
                                                   "--conf").items()})
    if args.port is not None:
        pairs["nimbus.thrift.port"] = str(args.port)
    if args.host is not None:
        pairs["nimbus.bind.host"] = args.host
    try:
        config = with_conf(config, pairs)
    except ValueError as e:
        where = f" (in {cluster.path})" if cluster.path else ""
        raise CliError(ExitCode.USAGE, f"{e}{where}") from None
    config = replace(config, conf_file=cluster.path, topology_defaults=dict(cluster.topology))
    try:
        return run_nimbus(config)
    except NotifierError as e:
        raise CliError(ExitCode.USAGE, str(e)) from None
    except (OSError, StoreError, TokenError) as e:
        raise CliError(ExitCode.ERROR, str(e)) from None
