"""Starting the SparkContext that hosts a topology's workers, and counting its task slots."""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import time
import urllib.request
from typing import TYPE_CHECKING, Any

from squall.spark.errors import SparkSetupError
from squall.spark.setup import (
    check_java,
    check_master_reachable,
    master_endpoint,
    prepare_environment,
    write_log4j_config,
)

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger("squall.spark")
DEFAULT_MASTER = "local[*]"
LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")

# Defaults for every squall application; the user's spark.* settings override them. The
# driver's address is not among them: see driver_address.
SPARK_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.scheduler.mode": "FAIR",
    "spark.ui.showConsoleProgress": "false",
    # a worker is one long-lived task: a fresh Python process per launch keeps a
    # relaunched worker free of what the dead one left behind (modules, threads)
    "spark.python.worker.reuse": "false",
}


def driver_address() -> str:
    """The address the driver binds and gives the executors when no ``spark.driver.*`` says.

    ``SPARK_LOCAL_IP`` (Spark's own variable for this host's address; Nimbus sets it to its
    own address for every launch), else 127.0.0.1, which keeps a laptop's driver off the
    network.
    """
    return os.environ.get("SPARK_LOCAL_IP") or "127.0.0.1"


def spark_settings(master: str, spark_conf: dict[str, Any] | None, log_dir: str) -> dict[str, str]:
    """The SparkConf entries squall starts its SparkContext with."""
    config, _ = write_log4j_config(log_dir)
    java_opt = f"-Dlog4j2.configurationFile=file:{config}"
    settings = dict(SPARK_DEFAULTS)
    host = driver_address()
    user = spark_conf or {}
    # Spark binds where it advertises unless told otherwise: a host set alone is bound too
    settings["spark.driver.host"] = str(user.get("spark.driver.host") or host)
    settings["spark.driver.bindAddress"] = str(user.get("spark.driver.bindAddress")
                                               or settings["spark.driver.host"])
    settings["spark.master"] = master
    settings["spark.app.name"] = "squall"
    settings["spark.driver.extraJavaOptions"] = java_opt
    settings["spark.executor.extraJavaOptions"] = java_opt
    for key, value in (spark_conf or {}).items():
        if key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
            value = f"{java_opt} {value}"
        settings[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return settings


def start_spark_context(master: str, spark_conf: dict[str, Any] | None = None,
                        log_dir: str | None = None, connect_timeout: float = 5.0) -> SparkContext:
    """Check Java and the master, then start (or join) this process's SparkContext.

    Raises ``SparkSetupError`` for no Java, an unreachable master, or a SparkContext of
    another master already running in this process (Spark allows one per process).
    """
    check_java()
    check_master_reachable(master, timeout=connect_timeout)
    from pyspark import SparkConf, SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        if active.master != master:
            raise SparkSetupError(
                f"this process already runs a SparkContext for {active.master}; squall cannot "
                f"start another for {master} (Spark allows one per process)"
            )
        return active
    log_dir = log_dir or os.environ.get("SQUALL_LOG_DIR", "logs")
    settings = spark_settings(master, spark_conf, log_dir)
    # squall's own sockets on "auto" (squall.spark.master.bind.host) follow the driver's address
    local_ip = _host_ip(settings["spark.driver.host"]) or _host_ip(settings["spark.driver.bindAddress"])
    prepare_environment(local_ip=local_ip or "127.0.0.1",
                        executor_python=settings.get("spark.pyspark.python"))
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    started = time.monotonic()
    sc = SparkContext(conf=conf)
    log.info("SparkContext for %s started in %.1fs (Spark logs in %s)", master,
             time.monotonic() - started, os.path.abspath(log_dir))
    return sc


def _host_ip(address: str) -> str | None:
    """``address`` if it is one host's IP address (not a name, not a wildcard), else None."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    return None if ip.is_unspecified else address


def local_slots(master: str) -> int | None:
    """Task slots of a ``local[...]`` master; None for cluster masters."""
    m = LOCAL.match(master.strip())
    if not m:
        return None
    n = m.group(1)
    if n is None:
        return 1
    return os.cpu_count() or 1 if n == "*" else int(n)


def cluster_slots(sc: SparkContext, master: str, wait_secs: float = 30.0,
                  ui_url: str | None = None, *, capped: bool = True) -> int:
    """Task slots the application can hold at once (cores / spark.task.cpus).

    ``local[N]`` has N. A standalone master is asked for its alive workers' cores
    (``ui_url``, by default ``http://host:8080/json``), at most ``spark.cores.max`` unless
    ``capped`` is false (the whole cluster's); failing that, the cores of the
    executors registered within ``wait_secs`` are counted.
    """
    slots = local_slots(master)
    if slots is not None:
        return slots
    task_cpus = int(sc.getConf().get("spark.task.cpus", "1"))
    endpoint = master_endpoint(master)
    if endpoint is not None:
        url = ui_url or f"http://{endpoint[0]}:8080/json"
        cores = _standalone_cores(url)
        if cores is not None:
            max_cores = sc.getConf().get("spark.cores.max")
            if max_cores and capped:
                cores = min(cores, int(max_cores))
            return cores // task_cpus
    return _executor_cores(sc, wait_secs) // task_cpus


def _standalone_cores(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as resp:  # noqa: S310 - our own master
            state = json.load(resp)
    except (OSError, ValueError):
        return None
    return sum(int(w.get("cores", 0)) for w in state.get("workers", []) if w.get("state") == "ALIVE")


def _executor_cores(sc: SparkContext, wait_secs: float) -> int:
    """Total cores of registered executors, waiting up to ``wait_secs`` for the first."""
    deadline = time.monotonic() + wait_secs
    tracker = sc._jsc.sc().statusTracker()
    while True:
        executors = [e for e in tracker.getExecutorInfos() if e.host() and e.port() > 0]
        # the driver is listed too; in cluster modes executors are the other entries
        if len(executors) > 1 or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    if len(executors) <= 1:
        raise SparkSetupError(f"no Spark executor registered with {sc.master} within {wait_secs:.0f}s; "
                              f"does the cluster have free cores and memory for this application?")
    return int(sc.defaultParallelism)
