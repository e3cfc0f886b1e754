"""Runs benchmark cases on squall: ``python -m benchmarks.squall_runner SPEC``.

``SPEC`` is the JSON of ``benchmarks.peers._common.read_spec`` plus ``"system"``:
``squall-local`` (``LocalCluster``: every worker a thread of this process),
``squall-spark`` (``SparkCluster``: this process is the Spark driver and topology master,
each worker a long-running Spark task in its own Python process), ``squall-standalone``
and ``squall-shipped`` (``SparkCluster`` on a standalone cluster of Workers on 127.0.0.2
and 127.0.0.3, ``benchmarks.standalone``: executors on squall's virtualenv, or on a bare
Python that gets squall through ``squall.spark.env=auto``). Prints one result row per
case. Figures come from the probes of ``benchmarks.workloads.components``; memory is the
resident set of this process and all its descendants (for Spark: the driver, the JVM, and
the Python workers the JVM started) at the end of the measured window.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks.peers._common import (
    Skip,
    Window,
    base_row,
    read_spec,
    serve,
    versions,
)
from benchmarks.peers._measure import (
    Probe,
    figures,
    read_probes,
    tree_rss,
)
from benchmarks.workloads import WORKLOADS

SETTLE_S = Probe.FLUSH_SECS + 0.15  # after the window, for every probe's next flush
ROOT = Path(__file__).resolve().parents[1]
LOG_DIR = ROOT / ".bench" / "logs"
# the standalone systems and the squall.spark.env each runs with
STANDALONE = {"squall-standalone": "none", "squall-shipped": "auto"}
SPARK_SYSTEMS = ("squall-spark", *STANDALONE)


def spark_master(workers: int) -> str:
    """``local[*]``, or ``local[N]`` when the case asks for more workers than cores.

    Each squall worker holds one Spark task slot for its lifetime, and ``local[*]`` has
    one slot per core.
    """
    return "local[*]" if workers <= (os.cpu_count() or 1) else f"local[{workers}]"


class Clusters:
    """The cluster each case runs on: one LocalCluster, or one SparkCluster per master.

    A SparkCluster that fails to start fails every later case that needs it at once, with
    the same reason, rather than trying again for each.
    """

    def __init__(self, system: str, stack: ExitStack) -> None:
        self.system = system
        self.stack = stack
        self.current: Any = None
        self.master: str | None = None
        self.failures: dict[str, str] = {}
        self.count = 0
        self.standalone: tuple[str, str] | None = None  # (master URL, UI URL) once started
        self.env_conf: dict[str, Any] = {}  # squall.spark.env and its settings, for each case

    def get(self, case: dict) -> Any:
        if self.system in SPARK_SYSTEMS:
            master = spark_master(case["workers"]) if self.system == "squall-spark" else self.system
            if master in self.failures:
                raise Skip(self.failures[master])
            try:
                return self._get(case)
            except Exception as e:  # noqa: BLE001 - an import or start failure skips the system
                self.failures[master] = f"SparkCluster({master!r}) did not start: {type(e).__name__}: {e}"
                self.current, self.master = None, None
                raise Skip(self.failures[master]) from e
        return self._get(case)

    def _get(self, case: dict) -> Any:
        if self.system in STANDALONE:
            return self._standalone(case)
        if self.system == "squall-local":
            if self.current is None:
                from squall import LocalCluster

                self.current = self.stack.enter_context(LocalCluster())
            return self.current
        master = spark_master(case["workers"])
        if master != self.master:
            if self.current is not None:
                self.current.shutdown()
            from squall.spark import SparkCluster

            LOG_DIR.mkdir(parents=True, exist_ok=True)
            self.current = self.stack.enter_context(SparkCluster(master=master, log_dir=str(LOG_DIR)))
            self.master = master
            self.current.start()
        return self.current


    def _standalone(self, case: dict) -> Any:
        """A SparkCluster on the standalone cluster, with ``spark.cores.max`` = the case's workers."""
        from squall.spark import SparkCluster
        from squall.spark import settings as S

        key = f"{self.system}:{case['workers']}"
        if key == self.master:
            return self.current
        if self.current is not None:
            self.current.shutdown()
        if self.standalone is None:
            from benchmarks.standalone import StandaloneSpark, bare_python

            shared = self.system == "squall-standalone"
            cluster = StandaloneSpark(sys.executable if shared else bare_python(),
                                      max(2, case["workers"]), ROOT / ".bench" / "standalone")
            self.stack.callback(cluster.stop)
            self.standalone = cluster.start()
        url, ui = self.standalone
        self.env_conf = {S.ENV: STANDALONE[self.system], S.MASTER_UI_URL: f"{ui}/json",
                         S.WORKER_BIND_HOST: "auto", S.ENV_CACHE_DIR: str(ROOT / ".bench" / "env-cache")}
        spark_conf = {"spark.cores.max": str(case["workers"]), "spark.executor.cores": "1",
                      "spark.executor.memory": "1g"}
        if self.system == "squall-standalone":  # the executors import the driver's squall
            spark_conf["spark.executorEnv.PYTHONPATH"] = os.environ.get("PYTHONPATH", str(ROOT))
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.current = self.stack.enter_context(SparkCluster(master=url, log_dir=str(LOG_DIR),
                                                             spark_conf=spark_conf))
        self.current.start(dict(self.env_conf))
        self.master = key
        return self.current


def run_case(clusters: Clusters, case: dict) -> dict[str, Any]:
    """Submit, warm up, measure, kill; the case's row. Probe files go in a temporary dir."""
    with tempfile.TemporaryDirectory(prefix="squall-bench-", ignore_cleanup_errors=True) as probe_dir:
        return measure(clusters, case, probe_dir)


def measure(clusters: Clusters, case: dict, probe_dir: str) -> dict[str, Any]:
    """The case's row, its probes writing to ``probe_dir``."""
    workload = WORKLOADS[case["workload"]]
    topology, conf = workload.build(case, probe_dir)
    cluster = clusters.get(case)
    conf.update(clusters.env_conf)
    clusters.count += 1
    name = f"bench-{clusters.count}"
    cluster.submit_topology(name, conf, topology)
    if hasattr(workload, "measure"):  # a workload that runs its own scenario (autoscale)
        try:
            own = workload.measure(cluster, name, case, probe_dir)
        finally:
            cluster.kill_topology(name, wait_secs=0)
        row = base_row(case, clusters.system)
        row.update(own)
        row["delivery"] = "at-least-once (XOR acking)"
        row["versions"] = versions("squall", "pyspark", "pyzmq", "msgpack")
        return row
    try:
        window = Window(case["warmup_s"], case["duration_s"])
        window.sleep_until(window.t1)
        memory = tree_rss()
        window.sleep_until(window.t1 + SETTLE_S)
        info = cluster.get_topology_info(name)
    finally:  # a case that fails must not leave its topology running under the next one
        cluster.kill_topology(name, wait_secs=0)
    acked, latencies = read_probes(probe_dir, "-spout")
    sink, _ = read_probes(probe_dir, "-sink")
    row = base_row(case, clusters.system)
    row.update(figures(case, window.t0, window.t1, sink=sink, acked=acked, latencies=latencies))
    row.update(memory)
    spout = info["components"]["sentence"]
    row["complete_latency_ms"] = spout.get("complete_latency_ms") if case["acking"] else None
    row["failed"] = spout.get("failed", 0)
    row["errors"] = [e.get("message") for e in info.get("errors", [])][:3]
    row["delivery"] = "at-least-once (XOR acking)" if case["acking"] else "none (no ackers)"
    if conf.get("topology.guarantee") == "exactly_once":
        row["delivery"] = "exactly-once (barriers from the spouts; acked at checkpoint commit)"
    if clusters.system in SPARK_SYSTEMS:
        row["master"] = clusters.master if clusters.system == "squall-spark" else "standalone (2 Workers)"
        row["memory_note"] = "driver + JVM + Python workers" if clusters.system == "squall-spark" else \
            "driver + its JVM + the standalone Master, Workers and their executors (all started here)"
        if clusters.system in STANDALONE:
            row["spark_env"] = STANDALONE[clusters.system]
        row["versions"] = versions("squall", "pyspark", "pyzmq", "msgpack")
    else:
        row["memory_note"] = "the one process hosting every worker"
        row["versions"] = versions("squall", "msgpack")
    return row


def main() -> int:
    system = read_spec()["system"]
    with ExitStack() as stack:
        clusters = Clusters(system, stack)
        return serve(system, lambda case: run_case(clusters, case))


if __name__ == "__main__":
    raise SystemExit(main())
