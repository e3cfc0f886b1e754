"""The ``squall.spark.*`` configuration keys: each with its default and meaning, in one place.

They go in the topology's conf like Storm's keys. ``spark.*`` keys in the conf of the
first topology (and ``SparkCluster(spark_conf=...)``) are passed to the SparkContext.
"""

from __future__ import annotations

from typing import Any

from squall.api.config import SQUALL_SPARK_MASTER, Setting
from squall.api.errors import InvalidTopologyError

MASTER = SQUALL_SPARK_MASTER
MASTER_BIND_HOST = "squall.spark.master.bind.host"
MASTER_TIMEOUT = "squall.spark.master.timeout.secs"
MASTER_UI_URL = "squall.spark.master.ui.url"
WORKER_BIND_HOST = "squall.spark.worker.bind.host"
MASTER_PORT = "squall.spark.master.port"
MASTER_CONTROL_PORT = "squall.spark.master.control.port"
WORKER_PORT = "squall.spark.worker.port"
HEARTBEAT = "squall.spark.worker.heartbeat.secs"
HEARTBEAT_TIMEOUT = "squall.spark.worker.heartbeat.timeout.secs"
START_TIMEOUT = "squall.spark.worker.start.timeout.secs"
EXECUTOR_WAIT = "squall.spark.executor.wait.secs"
START_INACTIVE = "squall.topology.start.inactive"
RESOURCE_PROFILES = "squall.spark.worker.resource.profiles"
ENV = "squall.spark.env"
ENV_PACKAGES = "squall.spark.env.packages"
ENV_PYTHON = "squall.spark.env.python"
ENV_CACHE_DIR = "squall.spark.env.cache.dir"
WORKER_MEMORY_BASE = "squall.spark.worker.memory.base.mb"
WORKER_CPU_PIN = "squall.spark.worker.cpu.pin"

SPARK_SETTINGS: tuple[Setting, ...] = (
    Setting(MASTER, "local[*]", "Spark master: local[N], spark://host:port, yarn, k8s://..."),
    Setting(MASTER_BIND_HOST, "auto", "address the topology master's sockets (registration, control) "
                                      "bind and advertise; auto: the driver's address (spark.driver.host "
                                      "if an IP, else SPARK_LOCAL_IP, else 127.0.0.1); 0.0.0.0: every "
                                      "interface"),
    Setting(MASTER_TIMEOUT, 30.0, "seconds a worker runs on without word from the master"),
    Setting(MASTER_UI_URL, None, "standalone master's JSON URL for counting cores "
                                 "(default http://<master host>:8080/json)"),
    Setting(WORKER_BIND_HOST, "auto", "address each worker's receive socket binds and advertises; "
                                      "auto: its executor's address (SQUALL_ADVERTISE_HOST, SPARK_LOCAL_IP, "
                                      "the pod's IP, the host name's); 0.0.0.0: every interface"),
    Setting(MASTER_PORT, 0, "port (or LOW-HIGH range) of the topology master's socket that workers "
                            "register to; 0: any free port (squall.spark.ports)"),
    Setting(MASTER_CONTROL_PORT, 0, "port (or LOW-HIGH range) of the topology master's control endpoint "
                                    "that Nimbus calls; 0: any free port"),
    Setting(WORKER_PORT, 0, "port range (LOW-HIGH), or comma-separated ports and ranges, of the workers' "
                            "receive sockets, one port per worker on a host (the cluster file's "
                            "supervisor.slots.ports sets it); 0: any free port"),
    Setting(HEARTBEAT, 1.0, "seconds between a worker's heartbeats (they carry its metrics)"),
    Setting(HEARTBEAT_TIMEOUT, 4.0, "seconds of silence after which a worker is declared dead (at least "
                                    "3 heartbeats: a slow beat or two is never taken for a death)"),
    Setting(START_TIMEOUT, 120.0, "seconds a launched worker has to register and open its tasks"),
    Setting(EXECUTOR_WAIT, 30.0, "seconds to wait for a cluster's first executor when counting slots"),
    Setting(START_INACTIVE, False, "submit with the spouts deactivated"),
    Setting(RESOURCE_PROFILES, False, "each worker's Spark task asks the cores its tasks' CPU asks add up "
                                      "to (a stage-level TaskResourceProfile; not in local mode)"),
    Setting(ENV, "auto", "the executors' environment: auto (pack this one; none on local masters), "
                         "none, or the path of a packed environment (.tar.gz, .zip, .pex)"),
    Setting(ENV_PACKAGES, [], "distributions installed here to pack with squall (auto), with "
                              "what they require; the client libraries of the connectors a "
                              "topology uses are packed without being listed (squall.spark.needs)"),
    Setting(ENV_PYTHON, None, "the Python the shipped environment runs on the executors (default "
                              "their PYSPARK_PYTHON, else python3.X of the driver's version)"),
    Setting(ENV_CACHE_DIR, None, "where packed environments are kept (default $SQUALL_ENV_CACHE, "
                                 "else ~/.cache/squall/envs)"),
    Setting(WORKER_MEMORY_BASE, 256.0, "MB a worker's memory limit allows the Python worker itself, "
                                       "added to its tasks' memory asks (an idle worker holds about "
                                       "100 MB; squall.spark.memory, docs/scheduler.md)"),
    Setting(WORKER_CPU_PIN, False, "on a local[N] master, every thread of worker i's process runs on "
                                   "core i (mod the cores the driver may use; squall.spark.affinity); "
                                   "cluster masters are not pinned"),
)

_DEFAULTS = {s.key: s.default for s in SPARK_SETTINGS}


def setting(conf: dict, key: str) -> Any:
    """``conf[key]``, or the key's default."""
    value = conf.get(key)
    return _DEFAULTS[key] if value is None else value


MIN_BEATS_PER_TIMEOUT = 3  # heartbeats a worker may miss in a row before it is declared dead


def check_heartbeats(conf: dict) -> None:
    """Refuse a heartbeat timeout shorter than ``MIN_BEATS_PER_TIMEOUT`` heartbeats (false deaths)."""
    interval, timeout = setting(conf, HEARTBEAT), setting(conf, HEARTBEAT_TIMEOUT)
    numbers = (interval, timeout)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in numbers):
        raise InvalidTopologyError(f"config {HEARTBEAT} and {HEARTBEAT_TIMEOUT} must be positive numbers, "
                                   f"got {interval!r} and {timeout!r}")
    if timeout < MIN_BEATS_PER_TIMEOUT * interval:
        raise InvalidTopologyError(
            f"config {HEARTBEAT_TIMEOUT} ({timeout}) must be at least {MIN_BEATS_PER_TIMEOUT} x "
            f"{HEARTBEAT} ({interval}): a worker would be taken for dead after a slow heartbeat")
