"""Nimbus's settings: each with its default and meaning, in one place.

``squall nimbus`` takes the common ones as options (``--host``, ``--port``, ``--data-dir``,
``--store``) and any key below as ``--conf key=value`` or from the cluster configuration
file (``squall.nimbus.clusterconf``; options win over the file).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

DEFAULT_PORT = 6627  # Storm's Nimbus port


def squall_home() -> Path:
    """``$SQUALL_HOME``, by default ``~/.squall``: Nimbus's data and the client's token."""
    return Path(os.environ.get("SQUALL_HOME") or Path.home() / ".squall")


@dataclass(frozen=True)
class NimbusConfig:
    """How one Nimbus runs. Paths default to places under ``data_dir``."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    data_dir: Path = field(default_factory=squall_home)
    store: str | None = None  # default: sqlite:<data_dir>/nimbus.sqlite3
    blob_dir: Path | None = None  # default: <data_dir>/blobs
    token_file: Path | None = None  # default: <data_dir>/nimbus.token
    log_dir: Path | None = None  # default: <data_dir>/logs
    url: str | None = None  # how clients reach this Nimbus; default http://host:port
    spark_master: str = "local[*]"
    spark_submit: str | None = None  # default: the pyspark package's bin/spark-submit
    submit_timeout_secs: float = 180.0
    master_timeout_secs: float = 20.0
    kill_timeout_secs: float = 60.0
    max_task_parallelism: int | None = None
    zk_session_timeout_secs: float = 6.0
    zk_auth: str | None = field(default=None, repr=False)  # user:password (digest); never shown
    http_timeout_secs: float = 30.0  # an idle or slow HTTP connection is cut after this
    max_wait_secs: float = 600.0  # the longest wait_secs a request may ask for
    tls_cert: Path | None = None  # serve HTTPS with this certificate chain (PEM)...
    tls_key: Path | None = None  # ...and this private key
    notifier_class: str | None = None  # import path of a TopologyActionNotifier
    conf_file: str | None = None  # the cluster configuration file read (squall.yaml)
    topology_defaults: dict[str, Any] = field(default_factory=dict)  # its topology.* defaults
    history_interval_secs: float = 10.0  # how often the UI's metric history samples topologies
    code_sync_freq_secs: float = 120.0  # Storm's nimbus.code.sync.freq.secs: full check of the copies
    http_allowed_hosts: str | None = None  # Host names answered beyond the bound address (comma-separated)
    http_max_connections: int = 64  # HTTP connections served at once; one more gets 503

    def resolved(self) -> NimbusConfig:
        """A copy with every default path and URL filled in."""
        data = Path(self.data_dir).expanduser().resolve()
        return replace(
            self, data_dir=data,
            store=self.store or f"sqlite:{data / 'nimbus.sqlite3'}",
            blob_dir=Path(self.blob_dir or data / "blobs").resolve(),
            token_file=Path(self.token_file or data / "nimbus.token"),
            log_dir=Path(self.log_dir or data / "logs").resolve(),
            url=self.url or f"{'https' if self.tls_cert else 'http'}://{self.host}:{self.port}",
        )


# --conf keys -> NimbusConfig fields
CONF_KEYS: dict[str, tuple[str, str]] = {
    "nimbus.thrift.port": ("port", f"the port Nimbus serves its API and UI on (default {DEFAULT_PORT}; "
                                   f"--port wins; Storm's name, also where clients look)"),
    "nimbus.bind.host": ("host", "the address Nimbus binds (default 127.0.0.1; --host wins); its "
                                 "topology masters' drivers bind and advertise it too"),
    "squall.spark.master": ("spark_master", "Spark master of new topologies unless theirs says"),
    "nimbus.spark.submit": ("spark_submit", "the spark-submit executable"),
    "nimbus.submit.timeout.secs": ("submit_timeout_secs", "longest wait for a topology to start"),
    "nimbus.master.timeout.secs": ("master_timeout_secs", "heartbeat silence before a topology "
                                                          "master is relaunched"),
    "nimbus.kill.timeout.secs": ("kill_timeout_secs", "longest wait for a killed topology to stop, "
                                                      "beyond its --wait"),
    "topology.max.task.parallelism": ("max_task_parallelism", "cap on any component's parallelism"),
    "nimbus.zookeeper.session.timeout.secs": ("zk_session_timeout_secs", "ZooKeeper session timeout"),
    "nimbus.blob.dir": ("blob_dir", "the blob store directory"),
    "nimbus.token.file": ("token_file", "the token file"),
    "nimbus.log.dir": ("log_dir", "where topology masters' logs go"),
    "nimbus.url": ("url", "how clients reach this Nimbus (told by a standby)"),
    "nimbus.http.timeout.secs": ("http_timeout_secs", "a request (its line, headers and body) must "
                                                      "arrive within this; slower connections are cut"),
    "nimbus.max.wait.secs": ("max_wait_secs", "the longest wait_secs a request may ask for"),
    "nimbus.tls.cert": ("tls_cert", "serve HTTPS with this certificate chain (PEM; also --tls-cert)"),
    "nimbus.tls.key": ("tls_key", "the private key of nimbus.tls.cert (PEM; also --tls-key)"),
    "nimbus.topology.action.notifier.plugin.class": (
        "notifier_class", "import path of a class told of every topology action (Storm's "
                          "ITopologyActionNotifierPlugin: prepare(conf), notify(name, action), cleanup())"),
    "nimbus.code.sync.freq.secs": ("code_sync_freq_secs", "how often every copy of the topologies' "
                                                          "code is checked against its digest (new "
                                                          "versions are copied within a second)"),
    "nimbus.history.interval.secs": ("history_interval_secs", "how often the metric history of the "
                                                              "UI samples each topology"),
    "nimbus.http.allowed.hosts": ("http_allowed_hosts", "comma-separated Host names the API and UI answer "
                                                        "beyond the bound address and nimbus.url's host "
                                                        "(others get 421: DNS rebinding); * answers any"),
    "nimbus.http.max.connections": ("http_max_connections", "HTTP connections served at once (one more "
                                                            "gets 503 at once)"),
}


def with_conf(config: NimbusConfig, pairs: dict[str, str]) -> NimbusConfig:
    """``config`` with ``--conf`` values applied; ``ValueError`` names a bad key or value."""
    types = {f.name: f.type for f in fields(NimbusConfig)}
    changes: dict[str, Any] = {}
    for key, raw in pairs.items():
        if key not in CONF_KEYS:
            raise ValueError(f"unknown Nimbus setting {key!r}; known: {', '.join(sorted(CONF_KEYS))}")
        name = CONF_KEYS[key][0]
        kind = str(types[name])
        try:
            if "float" in kind:
                changes[name] = float(raw)
            elif "int" in kind:
                changes[name] = int(raw)
            elif "Path" in kind:
                changes[name] = Path(raw)
            else:
                changes[name] = raw
        except ValueError:
            raise ValueError(f"Nimbus setting {key}: {raw!r} is not a valid value") from None
    return replace(config, **changes)
