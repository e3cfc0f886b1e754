"""SparkCluster on a real Spark standalone cluster (master + one 2-core worker on 127.0.0.1)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from tests.spark import helpers
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _executor_sys_path(sc) -> list[str]:
    return sc.parallelize([0], 1).map(lambda _: list(sys.path)).collect()[0]


@pytest.mark.timeout(240)
def test_user_module_topology_runs_on_standalone(standalone_cluster, tmp_path):
    here = os.path.dirname(os.path.abspath(tm.__file__))
    # the components live in topo_module, which the executors cannot import by themselves
    assert here not in _executor_sys_path(standalone_cluster.spark_context)
    n = 600
    conf, topology = tm.wordcount(n, str(tmp_path))
    standalone_cluster.submit_topology("wc-standalone", conf, topology)
    try:
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=90)
        info = standalone_cluster.get_topology_info("wc-standalone")
    finally:
        standalone_cluster.kill_topology("wc-standalone", wait_secs=0)
    assert acked == set(range(n))
    assert tm.read_results(str(tmp_path))[1] == tm.expected_counts(n)
    assert len({w["pid"] for w in info["workers"]}) == 2


@pytest.mark.timeout(300)
def test_sigkill_worker_on_standalone(standalone_cluster, tmp_path):
    n = 3000
    conf, topology = tm.wordcount(n, str(tmp_path), rate=400, timeout=4)
    standalone_cluster.submit_topology("wc-standalone-kill", conf, topology)
    name = "wc-standalone-kill"
    try:
        before = standalone_cluster.get_topology_info(name)
        spout_task = before["components"]["sentences"]["tasks"][0]
        victim = next(w for w in before["workers"] if spout_task not in w["tasks"])
        survivor = next(w for w in before["workers"] if w is not victim)
        helpers.wait_acked_at_least(str(tmp_path), 300, timeout=30)
        os.kill(victim["pid"], signal.SIGKILL)
        back = helpers.wait_worker_back(standalone_cluster, name, victim["worker"], victim["pid"], 90)
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=120)
        after = standalone_cluster.get_topology_info(name)
    finally:
        standalone_cluster.kill_topology(name, wait_secs=0)
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
    assert tm.read_results(str(tmp_path))[1] == tm.expected_counts(n), "a word was lost"
    # Spark retried the task itself (attempt 1) or the master relaunched the job
    assert (back["launch"], back["attempt"]) != (victim["launch"], victim["attempt"])
    still = after["workers"][survivor["worker"]]
    assert (still["pid"], still["launch"], still["attempt"], still["restarts"]) == (
        survivor["pid"], survivor["launch"], survivor["attempt"], 0), "the other worker restarted"


@pytest.mark.timeout(180)
def test_the_master_key_alone_selects_the_cluster(standalone_master, standalone_cluster, tmp_path):
    from squall.spark import SparkCluster

    url, _ = standalone_master
    n = 200
    conf, topology = tm.wordcount(n, str(tmp_path))
    conf["squall.spark.master"] = url
    # Spark allows one SparkContext per process: this cluster joins the fixture's one
    with SparkCluster() as cluster:
        cluster.submit_topology("wc-by-key", conf, topology)
        try:
            acked = helpers.wait_all_acked(str(tmp_path), n, timeout=90)
            assert cluster.spark_context.master == url
        finally:
            cluster.kill_topology("wc-by-key", wait_secs=0)
    assert acked == set(range(n))
    assert standalone_cluster.spark_context._jsc is not None  # left running for the fixture
