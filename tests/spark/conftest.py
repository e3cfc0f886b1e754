"""Fixtures of the Spark suite: a local[3] SparkCluster and a standalone Spark cluster.

Nothing is registered globally except the ``spark`` and ``slow`` markers. A SparkContext
takes seconds to start, so each module shares one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.spark.helpers import free_port

HERE = Path(__file__).parent


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: needs pyspark, pyzmq and Java 17+")
    config.addinivalue_line("markers", "slow: long-running tests (run in CI all the same)")


@pytest.fixture(scope="module")
def spark_log_dir(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("spark-logs")
    return str(path)


@pytest.fixture(scope="module")
def local_cluster(spark_log_dir):
    """A SparkCluster on local[3] shared by a test module."""
    from squall.spark import SparkCluster

    with SparkCluster(master="local[3]", log_dir=spark_log_dir) as cluster:
        cluster.start()
        yield cluster


def _spark_env() -> dict:
    import pyspark

    env = dict(os.environ)
    env.update(SPARK_HOME=str(Path(pyspark.__file__).parent), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1")
    # the test's own modules must reach the executors by squall's shipping, not PYTHONPATH
    env.pop("PYTHONPATH", None)
    return env


def _wait_alive_workers(ui: str, timeout: float) -> None:
    from tests.spark.helpers import alive_hosts

    deadline = time.monotonic() + timeout
    while not alive_hosts(ui):
        if time.monotonic() > deadline:
            raise RuntimeError(f"standalone Spark worker did not register with the master within {timeout}s")
        time.sleep(0.3)


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory):
    """A Spark standalone master and one worker (2 cores) on 127.0.0.1; yields (url, ui url)."""
    import pyspark

    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    env = _spark_env()
    work = tmp_path_factory.mktemp("spark-standalone")
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    url, ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
    procs = []
    logs = []
    try:
        for name, args in (
            ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(port), "--webui-port", str(ui_port)]),
            ("worker", ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                        "--cores", "2", "--memory", "2g", "--webui-port", str(worker_ui),
                        "--work-dir", str(work / "work")]),
        ):
            log = open(work / f"{name}.log", "w")  # noqa: SIM115
            logs.append(log)
            procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True))
            if name == "master":
                _wait_port(port, 60)
        _wait_alive_workers(ui, 60)
        yield url, ui
    finally:
        for p in reversed(procs):
            _kill_group(p)
        for log in logs:
            log.close()


def _wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@pytest.fixture(scope="module")
def standalone_cluster(standalone_master, spark_log_dir):
    """A SparkCluster whose workers run on the standalone cluster."""
    from squall.spark import SparkCluster

    url, ui = standalone_master
    with SparkCluster(master=url, log_dir=spark_log_dir,
                      spark_conf={"spark.executor.memory": "1g", "spark.cores.max": "2"}) as cluster:
        cluster.start()
        yield cluster
