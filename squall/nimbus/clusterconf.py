"""The cluster's configuration file: Storm's ``storm.yaml``, here ``squall.yaml``.

One YAML mapping of Storm-style keys, read by ``squall nimbus`` and by the ``squall``
command. Where it is: ``--conf FILE`` (``squall nimbus``), else ``$SQUALL_CONF``, else
``$SQUALL_HOME/squall.yaml`` (``~/.squall/squall.yaml``) if it exists. Its keys:

- Nimbus's settings (``squall.nimbus.config.CONF_KEYS``, such as ``nimbus.master.timeout.secs``
  or ``squall.spark.master``); ``--conf KEY=VALUE`` on the command line wins over the file;
- cluster-wide topology defaults: every ``topology.*`` key, squall's own topology keys
  (``squall.*``) and Spark's (``spark.*``, for every topology's SparkContext). Precedence,
  lowest first: squall's defaults < this file < the topology's ``Config`` < a component's
  configuration;
- where the client finds Nimbus: ``squall.nimbus.url``, or Storm's ``nimbus.seeds`` with
  ``nimbus.thrift.port`` (http://SEED:PORT for each seed);
- Storm's ``supervisor.slots.ports`` (a list of ports): the ports the workers' receive
  sockets take, the cluster default of ``squall.spark.worker.port`` (a worker binds the first
  free one of the list on its host; the file's own ``squall.spark.worker.port`` wins);
- Storm's daemon keys with no meaning here (``storm.*``, ``supervisor.*``, ``worker.*``,
  ``drpc.*``, ``ui.*``, ``logviewer.*``, ...) are accepted with a warning naming them, so
  a ``storm.yaml`` can be used as it is. Any other key is an error naming the file and line.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from squall.api.conf_checks import check_key as _check_key
from squall.api.config import DEFAULTS
from squall.api.errors import InvalidTopologyError

log = logging.getLogger("squall.nimbus.conf")
CONF_ENV = "SQUALL_CONF"
FILE_NAME = "squall.yaml"
CLIENT_URL = "squall.nimbus.url"
CLUSTER_KEYS = "squall.conf.cluster.keys"  # in a stored configuration: the keys the file gave
CLUSTER_FILE = "squall.conf.cluster.file"
STORM_SEEDS = ("nimbus.seeds", "nimbus.host")
STORM_PORT = "nimbus.thrift.port"
SLOTS_PORTS = "supervisor.slots.ports"
WORKER_PORT = "squall.spark.worker.port"
IGNORED_PREFIXES = ("storm.", "supervisor.", "worker.", "drpc.", "ui.", "logviewer.", "pacemaker.",
                    "transactional.", "dev.", "java.", "nimbus.", "blobstore.", "client.", "zmq.",
                    "executor.", "backpressure.", "num.", "resource.", "scheduler.",
                    "metrics.", "jstorm.", "ssl.", "kerberos.")


SELECTORS = ("topology.upgrade.worker.num", "topology.upgrade.component", "topology.upgrade.workers")


class ClusterConfError(ValueError):
    """The file cannot be used; the message names the file, the line and the key."""


@dataclass(frozen=True)
class ClusterConf:
    """What the file says, sorted by who uses it."""

    path: str | None = None
    nimbus: dict[str, Any] = field(default_factory=dict)  # Nimbus settings, by their keys
    topology: dict[str, Any] = field(default_factory=dict)  # cluster-wide topology defaults
    urls: list[str] = field(default_factory=list)  # where the client finds Nimbus
    port: int | None = None  # nimbus.thrift.port: where Nimbus listens (and clients look)
    ignored: list[str] = field(default_factory=list)  # Storm keys without a meaning here
    lines: dict[str, int] = field(default_factory=dict)  # key -> line in the file


def default_path(home: Path) -> Path | None:
    """``$SQUALL_CONF``, else ``home/squall.yaml`` if it exists, else None."""
    env = os.environ.get(CONF_ENV)
    if env:
        return Path(env).expanduser()
    candidate = home / FILE_NAME
    return candidate if candidate.is_file() else None


def read(path: str | os.PathLike, nimbus_keys: frozenset[str] | set[str] = frozenset()) -> ClusterConf:
    """Parse the file at ``path``; ``nimbus_keys`` are the keys of Nimbus's own settings."""
    try:
        import yaml
    except ImportError as e:  # pragma: no cover - pyyaml is in every extra that runs Nimbus
        raise ClusterConfError(f"{path}: reading it needs PyYAML (pip install pyyaml)") from e
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except OSError as e:
        raise ClusterConfError(f"{p}: cannot read the configuration file: {e.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise ClusterConfError(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
    if data is None:
        return ClusterConf(path=str(p))
    if not isinstance(data, dict) or node is None or not isinstance(node, yaml.MappingNode):
        raise ClusterConfError(f"{p}: must be a mapping of keys to values, not a {type(data).__name__}")
    lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
    return classify(data, str(p), lines, nimbus_keys)


def classify(data: dict, path: str, lines: dict[str, int],
             nimbus_keys: frozenset[str] | set[str]) -> ClusterConf:
    """Sort the keys of a parsed file (see the module docstring)."""
    nimbus: dict[str, Any] = {}
    topology: dict[str, Any] = {}
    ignored: list[str] = []
    seeds: Any = None
    port: Any = None
    url: Any = None
    for key, value in data.items():
        where = f"{path}:{lines.get(str(key), '?')}"
        if not isinstance(key, str):
            raise ClusterConfError(f"{where}: key {key!r} is not a string")
        if key == STORM_PORT:  # Nimbus listens on it, and clients find Nimbus there
            port = value
        elif key in nimbus_keys:
            nimbus[key] = value
        elif key == CLIENT_URL:
            url = value
        elif key in STORM_SEEDS:
            seeds = value
        elif key == SLOTS_PORTS:
            slots = slot_ports(value, where)
            if slots and WORKER_PORT not in data:
                topology[WORKER_PORT] = slots
        elif key in SELECTORS:
            raise ClusterConfError(f"{where}: {key} chooses the workers of one gray upgrade; it belongs in "
                                   f"the new version's configuration or on the upgrade command, not in the "
                                   f"cluster's defaults (where it would make every upgrade gray)")
        elif key.startswith(("topology.", "squall.", "spark.")):
            if not key.startswith("spark."):  # Spark's own keys are Spark's to check
                check_key(key, where)
            check_value(key, value, where)
            topology[key] = value
        elif key.startswith(IGNORED_PREFIXES):
            ignored.append(key)
        else:
            raise ClusterConfError(f"{where}: unknown key {key!r}: the file takes Nimbus settings, "
                                   f"topology.*, squall.* and spark.* defaults (a topology's own keys "
                                   f"belong in its Config)")
    if ignored:
        log.warning("%s: Storm keys with no meaning in squall, ignored: %s", path, ", ".join(ignored))
    urls = nimbus_urls(url, seeds, port, path, lines)
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise ClusterConfError(f"{path}:{lines.get(STORM_PORT)}: {STORM_PORT} must be a port number, "
                               f"got {port!r}")
    return ClusterConf(path=path, nimbus=nimbus, topology=topology, urls=urls, ignored=ignored, lines=lines,
                       port=None if port is None else int(port))


def slot_ports(value: Any, where: str) -> str | None:
    """``supervisor.slots.ports`` as a ``squall.spark.worker.port`` list (``"6700,6701"``).

    >>> slot_ports([6700, 6701, 6705], "f:1")
    '6700,6701,6705'
    """
    if value is None or value == []:
        return None
    if not isinstance(value, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in value):
        raise ClusterConfError(f"{where}: {SLOTS_PORTS} must be a list of port numbers, got {value!r}")
    return ",".join(str(p) for p in dict.fromkeys(value))


def check_key(key: str, where: str) -> None:
    """Refuse a misspelled ``topology.*`` or unknown ``squall.*`` key (``squall.api.conf_checks``)."""
    try:
        _check_key(key, where)
    except InvalidTopologyError as e:
        raise ClusterConfError(str(e)) from None


def check_value(key: str, value: Any, where: str) -> None:
    """A default of squall's known keys must have the default's kind (number, bool, ...)."""
    if key not in DEFAULTS or value is None:
        return
    default = DEFAULTS[key]
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(default, dict):
        ok = isinstance(value, (dict, str))
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:
        ok = True
    if not ok:
        raise ClusterConfError(f"{where}: {key} must be like {default!r}, got {value!r}")


def nimbus_urls(url: Any, seeds: Any, port: Any, path: str, lines: dict[str, int]) -> list[str]:
    """The Nimbus URLs the file names (``squall.nimbus.url`` or Storm's seeds and port)."""
    if url:
        if not isinstance(url, str):
            raise ClusterConfError(f"{path}:{lines.get(CLIENT_URL)}: {CLIENT_URL} must be a URL string")
        return [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
    if not seeds:
        return []
    if isinstance(seeds, str):
        seeds = [seeds]
    if port is None:
        port = 6627
    if isinstance(port, bool) or not isinstance(port, int):
        raise ClusterConfError(f"{path}:{lines.get(STORM_PORT)}: {STORM_PORT} must be a port number")
    return [f"http://{s}:{port}" for s in seeds]


def layered(defaults: dict[str, Any], conf: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(``conf`` over the cluster ``defaults``, the keys the defaults gave)."""
    taken = sorted(k for k in defaults if k not in conf)
    return {**defaults, **conf}, taken


def sources(stored: dict[str, Any], components: dict[str, dict],
            overrides: dict[str, tuple[Any, str]] | None = None) -> dict:
    """The effective configuration and where each value came from.

    ``stored`` is the configuration kept for the version (the cluster defaults merged in,
    ``CLUSTER_KEYS`` naming those), ``components`` each component's own configuration,
    ``overrides`` what operations changed since (key -> (value, source)).

    >>> out = sources({"topology.workers": 2, "topology.debug": True, CLUSTER_KEYS: ["topology.debug"],
    ...                CLUSTER_FILE: "c.yaml"}, {"count": {"topology.max.spout.pending": 5}})
    >>> [(r["value"], r["source"]) for r in out["topology"] if r["key"] == "topology.debug"]
    [(True, 'cluster (c.yaml)')]
    >>> [r["source"] for r in out["topology"] if r["key"] in ("topology.workers", "topology.acker.executors")]
    ['default', 'topology']
    >>> out["components"]["count"][0]["source"]
    'component count'
    """
    cluster_keys = set(stored.get(CLUSTER_KEYS) or ())
    cluster_file = stored.get(CLUSTER_FILE)
    own = {k: v for k, v in stored.items() if k not in (CLUSTER_KEYS, CLUSTER_FILE)}
    effective = {**DEFAULTS, **own}
    rows = []
    for key in sorted(effective):
        value = effective[key]
        if overrides and key in overrides:
            value, source = overrides[key]
        elif key in cluster_keys:
            source = f"cluster ({cluster_file})"
        elif key in own:
            source = "topology"
        else:
            source = "default"
        rows.append({"key": key, "value": value, "source": source})
    comps = {cid: [{"key": k, "value": v, "source": f"component {cid}"} for k, v in sorted(conf.items())]
             for cid, conf in sorted(components.items()) if conf}
    return {"topology": rows, "components": comps}
