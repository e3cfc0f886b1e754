"""JStorm's scheduler on a Spark standalone cluster of three hosts on one machine.

Spark Workers started with ``--host 127.0.0.2`` (and ``SPARK_LOCAL_IP`` the same) are
separate hosts to Spark: their executors report those hosts, and a worker process there
reports it too. The topologies check where squall put each worker and task, before and
after a worker kill and a rebalance, and what it refuses.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from squall import Bolt, Config, Fields, TopologyBuilder
from squall.scheduler import SchedulingError
from tests.spark import helpers
from tests.spark import topo_module as tm
from tests.spark.conftest import _kill_group, _spark_env, _wait_port
from tests.spark.helpers import free_port

pytestmark = [pytest.mark.spark, pytest.mark.slow]


class CoresBolt(Bolt):
    """Writes the host and the Spark task's CPUs of its worker, then acks everything."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def prepare(self, conf, context, collector) -> None:
        from pyspark import TaskContext

        tc = TaskContext.get()
        with open(os.path.join(self.out_dir, f"cores-{context.task_id}.txt"), "w") as f:
            f.write(f"{os.environ.get('SPARK_LOCAL_IP')} {tc.cpus() if tc is not None else None}")
        self.collector = collector

    def execute(self, tup) -> None:
        self.collector.ack(tup)
HOSTS = {"127.0.0.2": 2, "127.0.0.3": 1, "127.0.0.4": 1}  # host -> cores


@pytest.fixture(scope="module")
def three_hosts(tmp_path_factory):
    """A standalone master on 127.0.0.1 and a Worker on each of HOSTS; yields (url, ui)."""
    import pyspark

    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    work = tmp_path_factory.mktemp("spark-hosts")
    port, ui_port = free_port(), free_port()
    url, ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
    procs, logs = [], []

    # the executors import the squall under test (not another install), and nothing else of
    # this checkout: the test's own components still reach them by squall's shipping
    import squall

    only_squall = work / "squall-only"
    only_squall.mkdir()
    (only_squall / "squall").symlink_to(Path(squall.__file__).parent)

    def start(name: str, args: list[str], host: str) -> None:
        env = {**_spark_env(), "SPARK_LOCAL_IP": host, "PYTHONPATH": str(only_squall)}
        log = open(work / f"{name}.log", "w")  # noqa: SIM115
        logs.append(log)
        procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    try:
        start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                         "--webui-port", str(ui_port)], "127.0.0.1")
        _wait_port(port, 60)
        for host, cores in HOSTS.items():
            start(f"worker-{host}", ["org.apache.spark.deploy.worker.Worker", url, "--host", host,
                                     "--cores", str(cores), "--memory", "1g", "--webui-port", "0",
                                     "--work-dir", str(work / host)], host)
        deadline = time.monotonic() + 90
        while sorted(helpers.alive_hosts(ui)) != sorted(HOSTS):
            assert time.monotonic() < deadline, f"Workers alive: {helpers.alive_hosts(ui)}; logs in {work}"
            time.sleep(0.3)
        yield url, ui
    finally:
        for p in reversed(procs):
            _kill_group(p)
        for log in logs:
            log.close()


@pytest.fixture(scope="module")
def cluster(three_hosts, spark_log_dir):
    from squall.spark import SparkCluster

    url, _ = three_hosts
    from squall.spark.placement import executors

    with SparkCluster(master=url, log_dir=spark_log_dir,
                      spark_conf={"spark.executor.memory": "512m"}) as c:
        sc = c.start()
        # an executor on each host before the first submit (the machine may be slow to start JVMs)
        found = executors(sc, sum(HOSTS.values()), 120.0)
        assert sorted(h for h, _ in found) == sorted(HOSTS), found
        yield c


def wordcount(out_dir: str, ui: str, *, workers: int, count: int, n: int = 300, rate: float = 0.0,
              count_conf: dict | None = None, **conf_entries):
    builder = TopologyBuilder()
    builder.set_spout("sentences", tm.SentenceSpout(n, out_dir, rate), parallelism=1)
    builder.set_bolt("split", tm.SplitBolt(), parallelism=2).shuffle_grouping("sentences")
    declarer = builder.set_bolt("count", tm.CountBolt(out_dir), parallelism=count)
    declarer.fields_grouping("split", Fields("word"))
    for key, value in (count_conf or {}).items():
        declarer.add_configuration(key, value)
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_message_timeout_secs(5)
    conf.set_max_spout_pending(64)
    conf["squall.spark.master.ui.url"] = f"{ui}/json"
    conf.update({k.replace("__", "."): v for k, v in conf_entries.items()})
    return conf, builder.create_topology()


def task_hosts(info: dict) -> dict[int, str]:
    """Task id -> the host its worker process reports (where Spark runs it)."""
    return {t: w["host"] for w in info["workers"] for t in w["tasks"]}


def wait_running(cluster, name: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        info = cluster.get_topology_info(name)
        if all(w["state"] == "RUNNING" for w in info["workers"]):
            return info
        assert time.monotonic() < deadline, info["workers"]
        time.sleep(0.2)


@pytest.mark.timeout(240)
def test_task_on_differ_node_puts_each_count_task_on_its_own_host(cluster, three_hosts, tmp_path):
    conf, topology = wordcount(str(tmp_path), three_hosts[1], workers=3, count=3,
                               count_conf={"task.on.differ.node": True})
    cluster.submit_topology("differ", conf, topology)
    try:
        acked = helpers.wait_all_acked(str(tmp_path), 300, timeout=90)
        info = wait_running(cluster, "differ")
    finally:
        cluster.kill_topology("differ", wait_secs=0)
    assert acked == set(range(300))
    hosts = task_hosts(info)
    assert sorted(hosts[t] for t in info["components"]["count"]["tasks"]) == sorted(HOSTS)
    for w in info["workers"]:
        assert w["host"] == w["assigned_host"], info["workers"]
        assert w["resources"]["cpu_slots"] >= 1 and w["resources"]["placed_by"] == "default"
    assert info["placement_notes"] == []


@pytest.mark.timeout(240)
def test_user_defined_assignment_places_workers_and_tasks_where_asked(cluster, three_hosts, tmp_path):
    user = [{"host": "127.0.0.4", "components": {"count": 2}, "memory_mb": 512, "cpu": 50},
            {"host": "127.0.0.3", "components": {"split": 2}}]
    conf, topology = wordcount(str(tmp_path), three_hosts[1], workers=3, count=2,
                               squall__use__userdefine__assignment=user)
    cluster.submit_topology("userdef", conf, topology)
    try:
        acked = helpers.wait_all_acked(str(tmp_path), 300, timeout=90)
        info = wait_running(cluster, "userdef")
    finally:
        cluster.kill_topology("userdef", wait_secs=0)
    assert acked == set(range(300))
    hosts = task_hosts(info)
    assert {hosts[t] for t in info["components"]["count"]["tasks"]} == {"127.0.0.4"}
    assert {hosts[t] for t in info["components"]["split"]["tasks"]} == {"127.0.0.3"}
    w0 = info["workers"][0]
    placed = (w0["host"], w0["resources"]["placed_by"], w0["resources"]["memory_mb"])
    assert placed == ("127.0.0.4", "userdefine", 512.0)


@pytest.mark.timeout(120)
def test_refused_at_submit_when_hosts_are_too_few(cluster, three_hosts, tmp_path):
    conf, topology = wordcount(str(tmp_path), three_hosts[1], workers=4, count=4,
                               count_conf={"task.on.differ.node": True})
    with pytest.raises(SchedulingError) as e:
        cluster.submit_topology("too-few", conf, topology)
    assert str(e.value).startswith("component 'count' asks task.on.differ.node for 4 tasks; the cluster has "
                                   "3 hosts with a free worker slot")
    assert cluster.list_topologies() == []
    assert not list(tmp_path.glob("acked-*.txt")), "a task started"


@pytest.mark.timeout(360)
def test_old_assignment_across_a_worker_kill_and_a_rebalance(cluster, three_hosts, tmp_path):
    name, n = "old", 2000
    conf, topology = wordcount(str(tmp_path), three_hosts[1], workers=2, count=2, n=n, rate=200,
                               squall__use__old__assignment=True)
    cluster.submit_topology(name, conf, topology)
    try:
        before = wait_running(cluster, name)
        user = [t for c in ("sentences", "split", "count") for t in before["components"][c]["tasks"]]
        first = {t: h for t, h in task_hosts(before).items() if t in user}
        spout = before["components"]["sentences"]["tasks"][0]
        victim = next(w for w in before["workers"] if spout not in w["tasks"])
        helpers.wait_acked_at_least(str(tmp_path), 200, timeout=60)
        os.kill(victim["pid"], signal.SIGKILL)
        back = helpers.wait_worker_back(cluster, name, victim["worker"], victim["pid"], 90)
        assert back["host"] == victim["host"] == back["assigned_host"], (victim, back)
        assert {t: task_hosts(cluster.get_topology_info(name))[t] for t in user} == first
        cluster.rebalance(name, num_workers=3)
        after = wait_running(cluster, name, 90)
        now = task_hosts(after)
        moved = {t: (h, now[t]) for t, h in first.items() if now[t] != h}
        assert not moved, f"tasks moved host across the rebalance: {moved}"
        assert len(after["workers"]) == 3 and all(w["host"] == w["assigned_host"] for w in after["workers"])
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=120)
    finally:
        cluster.kill_topology(name, wait_secs=0)
    assert acked == set(range(n))


@pytest.mark.timeout(240)
def test_resource_profiles_give_a_worker_the_cores_its_tasks_ask(cluster, three_hosts, tmp_path):
    builder = TopologyBuilder()
    builder.set_spout("sentences", tm.SentenceSpout(100, str(tmp_path)), parallelism=1)
    builder.set_bolt("heavy", CoresBolt(str(tmp_path)), parallelism=1).set_cpu_load(150).shuffle_grouping(
        "sentences")
    conf = Config()
    conf.set_num_workers(2)
    conf["squall.spark.master.ui.url"] = f"{three_hosts[1]}/json"
    conf["squall.spark.worker.resource.profiles"] = True
    cluster.submit_topology("cores", conf, builder.create_topology())
    try:
        acked = helpers.wait_all_acked(str(tmp_path), 100, timeout=90)
        info = wait_running(cluster, "cores")
    finally:
        cluster.kill_topology("cores", wait_secs=0)
    assert acked == set(range(100))
    heavy = info["components"]["heavy"]["tasks"][0]
    worker = next(w for w in info["workers"] if heavy in w["tasks"])
    assert worker["host"] == "127.0.0.2" and worker["resources"]["cpu_percent"] > 150
    assert (tmp_path / f"cores-{heavy}.txt").read_text() == "127.0.0.2 2"
