"""``squall submit FILE``: validate, package and submit a topology (or run it locally).

See ``squall.client.loader`` for how the topology is found in FILE. The client checks what
it can first (the name, the configuration, that no topology of that name runs), as
JStorm's submitter does; Nimbus checks again.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time

from squall.api.errors import InvalidTopologyError
from squall.cli.commands._shared import LONG_TIMEOUT, client, key_values, print_summary
from squall.cli.output import print_json, progress
from squall.cli.topology_file import add_yaml_options, describe, load_any, parse_params
from squall.client.exits import CliError, ExitCode
from squall.client.loader import package_code, pickle_topology

# spark-submit's options: (flag, configuration key, meaning); paths become absolute
SPARK_FLAGS = (
    ("--master", "squall.spark.master", "Spark master: spark://host:port, yarn, k8s://..., local[N]"),
    ("--archives", "spark.archives", "archives unpacked on every executor, comma-separated"),
    ("--py-files", "spark.submit.pyFiles", ".zip, .egg or .py files put on the executors' path"),
    ("--files", "spark.files", "files put in every executor's working directory"),
    ("--packages", "spark.jars.packages", "Maven coordinates of jars"),
    ("--jars", "spark.jars", "jars for the driver and executors"),
    ("--executor-memory", "spark.executor.memory", "memory per executor, e.g. 2g"),
    ("--executor-cores", "spark.executor.cores", "cores per executor"),
    ("--total-executor-cores", "spark.cores.max", "cores of the application in all (standalone)"),
    ("--num-executors", "spark.executor.instances", "executors (YARN, Kubernetes)"),
)
_PATH_KEYS = frozenset({"spark.archives", "spark.submit.pyFiles", "spark.files", "spark.jars"})


def _absolute(paths: str) -> str:
    """Local paths of a comma-separated list made absolute (``#alias`` and URLs kept)."""
    out = []
    for item in paths.split(","):
        path, hash_, alias = item.strip().partition("#")
        if path and "://" not in path:
            path = os.path.abspath(os.path.expanduser(path))
        out.append(path + hash_ + alias)
    return ",".join(out)


def spark_options(args: argparse.Namespace) -> dict:
    """The configuration keys set by ``--master``, ``--archives`` and the other Spark flags."""
    out: dict = {}
    for flag, key, _ in SPARK_FLAGS:
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is not None:
            out[key] = _absolute(value) if key in _PATH_KEYS else value
    return out


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("submit", parents=[common], help="submit a topology from a Python or YAML file")
    p.add_argument("file", metavar="FILE", help="a .py file with build_topology() or a StormTopology, "
                                                "or a .yaml topology (Flux)")
    p.add_argument("--name", help="the topology's name (default: the file's name)")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="override a config key")
    p.add_argument("--inactive", action="store_true", help="submit with the spouts deactivated")
    p.add_argument("--env", metavar="auto|none|PATH",
                   help="how squall and the topology's dependencies reach the Spark executors "
                        "(squall.spark.env): auto packs this environment (the default, none on a "
                        "local master), none ships nothing, PATH ships a packed environment "
                        "(.tar.gz, .zip or .pex, a path on the Nimbus host)")
    p.add_argument("--local", type=float, metavar="SECS",
                   help="run on a LocalCluster in this process for SECS seconds, without Nimbus")
    spark = p.add_argument_group("Spark (as spark-submit takes them; each sets the key shown)")
    for flag, key, what in SPARK_FLAGS:
        spark.add_argument(flag, metavar="VALUE", help=f"{what} ({key})")
    add_yaml_options(p)
    p.add_argument("--dry-run", action="store_true",
                   help="check the topology and print its plan (components, tasks, workers, "
                        "streams) without submitting")
    p.set_defaults(run=run)


def prepare(file: str, name: str | None, conf_items: list[str] | None, filter_file: str | None = None,
            env_filter: bool = False, param_items: list[str] | None = None) -> tuple[str, dict, object]:
    """(name, conf, topology) from FILE and the options, checked as far as the client can."""
    from squall.runtime.submission import check_name, prepare_conf

    overrides = key_values(conf_items, "--conf")
    default_name, conf, topology = load_any(file, filter_file, env_filter, parse_params(param_items))
    conf.update(overrides)
    name = name or default_name
    try:
        check_name(name)
    except InvalidTopologyError as e:
        raise CliError(ExitCode.USAGE, f"{e} (pick one with --name)") from None
    try:
        prepare_conf(conf, topology)
    except InvalidTopologyError as e:
        raise CliError(ExitCode.ERROR, f"invalid topology: {e}") from None
    try:
        json.dumps(conf)
    except (TypeError, ValueError) as e:
        raise CliError(ExitCode.ERROR, f"the configuration must be JSON-serialisable: {e}") from None
    return name, conf, topology


def upload_body(conf: dict, topology: object) -> dict:
    """The ``conf``, ``topology`` and ``code`` fields of a submit or upgrade request."""
    code, modules = package_code()
    return {"conf": conf, "topology": base64.b64encode(pickle_topology(topology, modules)).decode(),  # type: ignore[arg-type]
            "code": base64.b64encode(code).decode()}


def run(args: argparse.Namespace) -> int:
    """Submit (or run locally)."""
    name, conf, topology = prepare(args.file, args.name, args.conf, args.filter, args.env_filter, args.param)
    if args.dry_run:
        from squall.runtime.submission import prepare_conf

        print(describe(name, prepare_conf(conf, topology), topology))
        return 0
    if args.inactive:
        conf["squall.topology.start.inactive"] = True
    conf.update(spark_options(args))
    if args.env:
        conf["squall.spark.env"] = args.env if args.env in ("auto", "none") else os.path.abspath(args.env)
    if args.local is not None:
        return run_local(name, conf, topology, args.local, args.json)
    nimbus = client(args)
    try:
        nimbus.get(f"/topologies/{name}")
    except CliError as e:
        if e.code != ExitCode.NOT_FOUND:
            raise
    else:
        raise CliError(ExitCode.CONFLICT, f"topology {name!r} is already running; kill it first "
                                          f"or pick another name with --name")
    from squall.flux.plan import memory_state_warning

    warning = memory_state_warning(conf, topology.stateful)  # type: ignore[attr-defined]
    if warning and not args.json:
        print(f"warning: {warning}", file=sys.stderr)
    body = {"name": name, **upload_body(conf, topology)}
    with progress(f"submitting {name!r} and waiting for its workers"):
        summary = nimbus.post("/topologies", body, timeout=LONG_TIMEOUT)
    print_summary(args, summary, f"topology {name!r} submitted ({summary['id']}), {summary['status']}")
    replication = summary.get("replication") or {}
    if not args.json and replication and not replication.get("achieved", True):
        print(f"warning: {replication.get('message')}", file=sys.stderr)
    return 0


def cluster_defaults() -> dict:
    """The cluster file's topology defaults (``$SQUALL_CONF`` or ``~/.squall/squall.yaml``), if any."""
    from squall.nimbus import clusterconf
    from squall.nimbus.config import CONF_KEYS, squall_home

    path = clusterconf.default_path(squall_home())
    if path is None:
        return {}
    try:
        return dict(clusterconf.read(path, set(CONF_KEYS)).topology)
    except clusterconf.ClusterConfError as e:
        raise CliError(ExitCode.USAGE, str(e)) from None


def run_local(name: str, conf: dict, topology: object, secs: float, as_json: bool) -> int:
    """Run on a LocalCluster for ``secs`` seconds, then print its info and kill it.

    The cluster file's topology defaults apply under the topology's own configuration, as
    Nimbus applies its own.
    """
    from squall.local.cluster import LocalCluster

    conf = {**cluster_defaults(), **conf}
    with LocalCluster() as cluster:
        try:
            cluster.submit_topology(name, conf, topology)  # type: ignore[arg-type]
        except (InvalidTopologyError, RuntimeError) as e:
            raise CliError(ExitCode.ERROR, f"{type(e).__name__}: {e}") from None
        time.sleep(max(0.0, secs))
        info = cluster.get_topology_info(name)
        cluster.kill_topology(name, wait_secs=0)
    if as_json:
        print_json(info)
    else:
        for cid, c in sorted(info["components"].items()):
            print(f"{cid}: emitted {c['emitted']}, acked {c['acked']}, failed {c['failed']}",
                  file=sys.stdout)
        print(f"topology {name!r} ran locally for {secs:g}s with {len(info['errors'])} error(s)")
    return 0
