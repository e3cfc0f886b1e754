"""A Spark standalone cluster whose executors' Python has none of squall's packages.

Two Workers on the loopback hosts 127.0.0.2 and 127.0.0.3 run their executors with a
fresh virtualenv that has no packages at all (their ``PYSPARK_PYTHON``), as a machine
that never saw squall would. squall packs the submitting environment, Spark ships it
through ``spark.archives``, and the executors must run on it the hot path this squall
has; a second submit reuses the archive. The word count on such executors, through a
killed worker, runs on hosts of their own: ``tests/nimbus/test_hosts_cluster.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from squall.spark import settings as S
from squall.spark.environment import ALIAS
from tests.spark import helpers
from tests.spark.conftest import _kill_group, _spark_env, _wait_port
from tests.spark.test_environment import MISSING, bare_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]
HOSTS = ("127.0.0.2", "127.0.0.3")

# Built by exec so that cloudpickle ships it by value: the executors have no tests package.
PROBE_SOURCE = """
def probe(_):
    import os, sys
    found = {}
    for name in ("squall", "msgpack", "zmq", "cloudpickle"):
        module = __import__(name)
        found[name] = module.__file__
    import squall._speedups
    return {"executable": sys.executable, "prefix": sys.prefix, "files": found,
            "hot_path": squall._speedups.STATE, "host": os.environ.get("SPARK_LOCAL_IP")}
"""


def _probe():
    namespace: dict = {"__name__": "squall_probe"}
    exec(PROBE_SOURCE, namespace)  # noqa: S102 - our own source, see PROBE_SOURCE
    return namespace["probe"]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    venv = tmp_path_factory.mktemp("bare") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    for module in MISSING:
        done = subprocess.run([python, "-c", f"import {module}"], env=bare_env(), capture_output=True,
                              timeout=60, cwd=venv)
        assert done.returncode != 0, f"the bare Python imports {module}"
    return python


@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory, bare_python):
    """A master on 127.0.0.1 and a 1-core Worker on each of HOSTS, executors on the bare Python."""
    import pyspark

    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    work = tmp_path_factory.mktemp("spark-bare")
    port, ui_port = helpers.free_port(), helpers.free_port()
    url, ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
    env = _spark_env()
    # a machine that never saw squall: its Python is the bare one, nothing forces plain Python
    for key in ("SQUALL_PURE_PYTHON", "SQUALL_PYTHON", "VIRTUAL_ENV"):
        env.pop(key, None)
    env["PYSPARK_PYTHON"] = bare_python
    procs, logs = [], []
    try:
        roles = [("master", "127.0.0.1", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                          "--port", str(port), "--webui-port", str(ui_port)])]
        roles += [(f"worker-{host}", host, ["org.apache.spark.deploy.worker.Worker", url, "--host", host,
                                            "--cores", "1", "--memory", "1g", "--webui-port",
                                            str(helpers.free_port()), "--work-dir", str(work / host)])
                  for host in HOSTS]
        for name, host, args in roles:
            log = open(work / f"{name}.log", "w")  # noqa: SIM115
            logs.append(log)
            procs.append(subprocess.Popen([spark_class, *args], env={**env, "SPARK_LOCAL_IP": host},
                                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            if name == "master":
                _wait_port(port, 90)
        helpers.wait_until(lambda: set(helpers.alive_hosts(ui)) == set(HOSTS), 120,
                           "both Workers registering")
        yield url, ui, work
    finally:
        for p in reversed(procs):
            _kill_group(p)
        for log in logs:
            log.close()


@pytest.fixture(scope="module")
def shipped(bare_cluster, spark_log_dir, tmp_path_factory):
    from squall.spark import SparkCluster

    url, ui, _ = bare_cluster
    cache = tmp_path_factory.mktemp("env-cache")
    # each worker binds and advertises its own host's address, as on machines of their own
    conf = {S.ENV_CACHE_DIR: str(cache), S.MASTER_UI_URL: f"{ui}/json", S.WORKER_BIND_HOST: "auto"}
    with SparkCluster(master=url, log_dir=spark_log_dir,
                      spark_conf={"spark.executor.memory": "512m", "spark.cores.max": "2"}) as cluster:
        cluster.start(conf)  # squall.spark.env is auto: the master is not local
        yield cluster, conf




@pytest.mark.timeout(400)
def test_executors_run_the_bare_python_on_the_shipped_environment(shipped, bare_python):
    cluster, _ = shipped
    assert cluster.environment is not None and cluster.environment.built
    sc = cluster.spark_context
    assert sc.getConf().get("spark.pyspark.python") == f"./{ALIAS}/bin/python"
    results = sc.parallelize(range(4), 4).map(_probe()).collect()
    for r in results:
        assert r["executable"] == bare_python
        assert r["prefix"] == str(Path(bare_python).parent.parent)
        for name, file in r["files"].items():
            assert f"/{ALIAS}/site-packages/" in file, (name, file)
        assert r["host"] in HOSTS
    expected = "compiled" if _this_squall_is_compiled() else "pure"
    assert {r["hot_path"] for r in results} == {expected}


def _this_squall_is_compiled() -> bool:
    from squall import _speedups

    return _speedups.STATE in ("compiled", "forced") and (_speedups.ROOT / _speedups.MANIFEST).exists()



@pytest.mark.timeout(120)
def test_a_second_submit_reuses_the_packed_environment(shipped, tmp_path):
    from squall.spark.shipping import environment_settings

    cluster, conf = shipped
    first = cluster.environment
    assert first is not None
    stamp = first.path.stat().st_mtime_ns
    started = time.monotonic()
    # what a second topology's launch (a Nimbus launch, a new driver) does
    settings, again = environment_settings(conf, str(cluster.spark_context.master), {})
    assert again is not None and not again.built
    assert again.path == first.path and first.path.stat().st_mtime_ns == stamp
    assert settings["spark.archives"] == f"{first.path}#{ALIAS}"
    assert time.monotonic() - started < 60
