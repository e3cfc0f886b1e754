"""RELIABILITY C7: Spark Worker daemons (JStorm's supervisors) SIGKILLed on a standalone
cluster of several hosts on one machine (Workers on 127.0.0.2, .3, ...).

A Spark Worker daemon is what starts and watches executors on its host; when it dies, its
executors exit with it (Spark's ``WorkerWatcher``), so the squall workers they ran die too.
When every Worker is gone, the topology master keeps relaunching them with its backoff until
a new Worker joins and the application gets an executor there (C7); every spout message is
acked (replays included). C5 (one Worker daemon killed, its worker relaunched on another
host) runs on hosts of their own: ``tests/nimbus/test_hosts_cluster.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.spark import helpers
from tests.spark import topo_module as tm
from tests.spark.conftest import _kill_group, _spark_env, _wait_port
from tests.spark.helpers import free_port
from tests.spark.test_placement import wordcount

pytestmark = [pytest.mark.spark, pytest.mark.slow]


class Hosts:
    """A standalone master on 127.0.0.1 and Worker daemons on other loopback addresses."""

    def __init__(self, work: Path) -> None:
        import pyspark

        import squall

        self.spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
        self.work = work
        self.port, ui_port = free_port(), free_port()
        self.url, self.ui = f"spark://127.0.0.1:{self.port}", f"http://127.0.0.1:{ui_port}"
        self.master: subprocess.Popen | None = None
        self.workers: dict[str, subprocess.Popen] = {}
        self.logs: list = []
        # the executors import the squall under test, and nothing else of this checkout
        self.only_squall = work / "squall-only"
        self.only_squall.mkdir()
        (self.only_squall / "squall").symlink_to(Path(squall.__file__).parent)
        self.master = self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                             "--port", str(self.port), "--webui-port", str(ui_port)],
                                  "127.0.0.1")
        _wait_port(self.port, 60)

    def _start(self, name: str, args: list[str], host: str) -> subprocess.Popen:
        env = {**_spark_env(), "SPARK_LOCAL_IP": host, "PYTHONPATH": str(self.only_squall)}
        log = open(self.work / f"{name}.log", "w")  # noqa: SIM115
        self.logs.append(log)
        return subprocess.Popen([self.spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def add_worker(self, host: str, cores: int) -> None:
        """Start a Worker daemon on ``host`` and wait until the master lists it alive."""
        self.workers[host] = self._start(
            f"worker-{host}", ["org.apache.spark.deploy.worker.Worker", self.url, "--host", host,
                               "--cores", str(cores), "--memory", "1g", "--webui-port", "0",
                               "--work-dir", str(self.work / host)], host)
        helpers.wait_until(lambda: host in helpers.alive_hosts(self.ui), 90,
                           f"the Worker on {host} to register")

    def kill_worker(self, host: str) -> None:
        """SIGKILL the Worker daemon of ``host`` only (its executors notice and exit)."""
        proc = self.workers[host]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def close(self) -> None:
        for proc in [*self.workers.values(), self.master]:
            if proc is not None:
                _kill_group(proc)  # the Worker's executors are in its process group
        for log in self.logs:
            log.close()


@pytest.fixture
def hosts(tmp_path_factory):
    h = Hosts(tmp_path_factory.mktemp("spark-supervisors"))
    try:
        yield h
    finally:
        h.close()


def start_cluster(hosts: Hosts, spark_log_dir: str, cores: int):
    from squall.spark import SparkCluster
    from squall.spark.placement import executors

    cluster = SparkCluster(master=hosts.url, log_dir=spark_log_dir,
                           spark_conf={"spark.executor.memory": "512m"})
    sc = cluster.start()
    found = executors(sc, cores, 120.0)
    assert sum(c for _, c in found) >= cores, found
    return cluster


def running(cluster, name: str) -> dict:
    info = cluster.get_topology_info(name)
    return info if all(w["state"] == "RUNNING" for w in info["workers"]) else {}


def wait_running(cluster, name: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while not (info := running(cluster, name)):
        assert time.monotonic() < deadline, cluster.get_topology_info(name)["workers"]
        time.sleep(0.2)
    return info


@pytest.mark.timeout(480)
def test_c7_every_worker_daemon_killed_then_one_added_resumes_there(hosts, spark_log_dir, tmp_path):
    for host in ("127.0.0.2", "127.0.0.3"):
        hosts.add_worker(host, 1)
    cluster = start_cluster(hosts, spark_log_dir, 2)
    name, n = "c7", 1500
    conf, topology = wordcount(str(tmp_path), hosts.ui, workers=2, count=2, n=n, rate=150)
    cluster.submit_topology(name, conf, topology)
    try:
        before = wait_running(cluster, name, 120)
        assert {w["host"] for w in before["workers"]} == {"127.0.0.2", "127.0.0.3"}
        helpers.wait_acked_at_least(str(tmp_path), 150, timeout=90)
        for host in ("127.0.0.2", "127.0.0.3"):
            hosts.kill_worker(host)
        # nowhere to run: the workers are down and relaunched with the master's backoff
        helpers.wait_until(lambda: all(w["state"] != "RUNNING" for w in
                                       cluster.get_topology_info(name)["workers"]), 120,
                           "every squall worker to be seen down")
        stalled = len(tm.read_results(str(tmp_path))[0])
        hosts.add_worker("127.0.0.5", 2)
        after = wait_running(cluster, name, 240)
        assert {w["host"] for w in after["workers"]} == {"127.0.0.5"}, after["workers"]
        assert all(w["pid"] not in {b["pid"] for b in before["workers"]} for w in after["workers"])
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=240)
    finally:
        cluster.kill_topology(name, wait_secs=0)
        cluster.shutdown()
    print(f"{stalled} of {n} acked when every Worker daemon was gone")
    assert stalled < n, "the kill came too late to test anything"
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
