"""squall on hosts of their own: every server in a network namespace (``tests.netns``).

The hosts, on 10.77.43.0/24, each with its own loopback (this test process is 10.77.43.1,
the client's host: the CLI, a browser, Prometheus):

- ``zk``: ZooKeeper on 2181; ``redis``: Redis on 6379, holding the counts' state;
  ``kafka``: a Kafka-protocol broker (Tansu) on 9092;
- ``spark``: a Spark standalone master on 7077 (its UI, which squall asks for cores, on 8080);
- ``w1`` .. ``w4``: one Spark Worker each, one core each, whose executors run a bare
  virtualenv's Python (no packages: squall ships its environment, connectors' clients
  included);
- ``nimbus-a``, ``nimbus-b``: ``squall nimbus`` on 6627, the leader and a standby sharing
  the ZooKeeper, each with its own data directory and cluster file (``squall.yaml``, which
  gives the ``spark.*`` defaults).

A topology submitted from the client's host runs its topology master (the driver) on the
leader's host and its three workers on three Worker hosts; it must reach them and they it,
through their addresses only. Then, in order: a worker SIGKILLed comes back, a Worker daemon
SIGKILLed sends its worker to the spare host, the leader's host dies and the standby
relaunches the topology from its own host; after each, every emitted sentence is acked and
counted exactly once. Then an exactly-once word count keeps its state and sink on the Redis
host through a worker kill, and a Kafka topology reads the broker's host with the client
library squall shipped to the executors. One set of hosts serves the whole module.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.kafka_broker import KafkaBroker
from tests.netns import CLIENT, Network
from tests.nimbus import results as R
from tests.nimbus.harness import Cli, NimbusProcess, kill_leftover_launches
from tests.nimbus.test_lifecycle import assert_exact, ok, progress
from tests.nimbus.topology_source import write_topology
from tests.nimbus.zookeeper_server import ZooKeeperServer
from tests.redis_server import RedisServer
from tests.spark.conftest import _kill_group, _spark_env
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "wc-hosts"
TOKEN = "hosts-test-token-0123456789abcdef0123"
WORKER_HOSTS = ("w1", "w2", "w3", "w4")
HOSTS = ["zk", "redis", "kafka", "spark", *WORKER_HOSTS, "nimbus-a", "nimbus-b"]
NIMBUS_PORT = 6627


def _home(path: Path, conf: str) -> Path:
    path.mkdir(mode=0o700, parents=True)
    token = path / "nimbus.token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    (path / "squall.yaml").write_text(conf)
    return path


def bare_python(where: Path) -> str:
    """A fresh virtualenv's Python with no packages: the executors' Python on a real cluster."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return str(where / "bin" / "python")


class SparkHosts:
    """A standalone master on one host and a one-core Worker on each of others, whose
    executors run ``python`` (a bare one: squall ships what they need)."""

    def __init__(self, net: Network, work: Path, python: str) -> None:
        import pyspark

        self.net, self.work, self.python = net, work, python
        self.spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
        self.master_host = net.addresses["spark"]
        self.url = f"spark://{self.master_host}:7077"
        self.ui = f"http://{self.master_host}:8080"
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: list = []

    def _start(self, host: str, args: list[str]) -> None:
        env = {**_spark_env(), "SPARK_LOCAL_IP": self.net.addresses[host], "PYSPARK_PYTHON": self.python}
        for key in ("SQUALL_PURE_PYTHON", "SQUALL_PYTHON", "VIRTUAL_ENV"):  # a machine that never saw squall
            env.pop(key, None)
        log = open(self.work / f"{host}.log", "w")  # noqa: SIM115 - closed in close()
        self.logs.append(log)
        self.procs[host] = subprocess.Popen(self.net.command(host, [self.spark_class, *args]), env=env,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self) -> SparkHosts:
        self._start("spark", ["org.apache.spark.deploy.master.Master", "--host", self.master_host,
                              "--port", "7077", "--webui-port", "8080"])
        for host in WORKER_HOSTS:
            address = self.net.addresses[host]
            self._start(host, ["org.apache.spark.deploy.worker.Worker", self.url, "--host", address,
                               "--cores", "1", "--memory", "1g", "--webui-port", "8081",
                               "--work-dir", str(self.work / host)])
        want = {self.net.addresses[h] for h in WORKER_HOSTS}
        assert wait_for(lambda: self.alive() == want, 180, step=0.5), f"Workers alive: {self.alive()}"
        return self

    def alive(self) -> set[str]:
        try:
            with urllib.request.urlopen(f"{self.ui}/json", timeout=2) as resp:
                state = json.load(resp)
        except (OSError, ValueError):  # not up yet, or a page instead of JSON while it starts
            return set()
        return {w["host"] for w in state.get("workers", []) if w.get("state") == "ALIVE"}

    def kill(self, host: str) -> None:
        """SIGKILL the Worker daemon of ``host`` only (its executors notice and exit)."""
        proc = self.procs[host]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def close(self) -> None:
        for proc in self.procs.values():
            _kill_group(proc)
        for log in self.logs:
            log.close()


class World:
    """The module's hosts and what runs on them."""

    net: Network
    root: Path
    out: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World()
    w.root = tmp_path_factory.mktemp("hosts")
    w.out = w.root / "out"
    w.net = Network(HOSTS).up()
    started = time.monotonic()
    servers: list = []
    try:
        a = w.net.addresses
        zk = ZooKeeperServer(w.root / "zk", host=a["zk"], port=2181, wrap=w.net.command("zk", []))
        zk.start()
        servers.append(zk)
        w.redis = RedisServer(w.root / "redis", host=a["redis"], port=6379, wrap=w.net.command("redis", []))
        w.redis.start()
        servers.append(w.redis)
        w.kafka = KafkaBroker(w.root / "kafka", host=a["kafka"], port=9092, wrap=w.net.command("kafka", []))
        w.kafka.start()
        servers.append(w.kafka)
        w.python = bare_python(w.root / "bare")
        w.spark = SparkHosts(w.net, w.root, w.python).start()
        # the cluster's spark.* defaults: every topology's SparkContext gets them
        cluster_file = (f"spark.executor.memory: 512m\nspark.cores.max: {len(WORKER_HOSTS)}\n"
                        f"squall.spark.env.cache.dir: {w.root / 'env-cache'}\n")
        conf = {"squall.spark.master": w.spark.url, "nimbus.zookeeper.session.timeout.secs": "4",
                "nimbus.code.sync.freq.secs": "2", "nimbus.submit.timeout.secs": "300"}
        store = zk.uri("/squall-hosts")
        w.home_a = _home(w.root / "home-a", cluster_file)
        w.home_b = _home(w.root / "home-b", cluster_file)
        w.a = NimbusProcess(w.home_a, w.root, port=NIMBUS_PORT, store=store, conf=conf, name="nimbus-a",
                            host=a["nimbus-a"], conf_file=w.home_a / "squall.yaml",
                            wrap=w.net.command("nimbus-a", []))
        w.b = NimbusProcess(w.home_b, w.root, port=NIMBUS_PORT, store=store, conf=conf, name="nimbus-b",
                            host=a["nimbus-b"], conf_file=w.home_b / "squall.yaml",
                            wrap=w.net.command("nimbus-b", []))
        w.a.start(60)
        w.a.wait_leader(60)
        w.b.start(60)
        w.cli = Cli(f"{w.a.url},{w.b.url}", w.home_a, w.root)
        print(f"hosts up in {time.monotonic() - started:.1f}s")
        yield w
    finally:
        for nimbus in (getattr(w, "a", None), getattr(w, "b", None)):
            if nimbus is not None:
                nimbus.kill()
        for home in (getattr(w, "home_a", None), getattr(w, "home_b", None)):
            if home is not None:
                kill_leftover_launches(home)
        if hasattr(w, "spark"):
            w.spark.close()
        for server in reversed(servers):
            server.stop()
        if hasattr(w, "kafka"):
            # the broker's admin client would go on reconnecting, past the removed subnet
            w.kafka._admin = None
            gc.collect()
        w.net.kill_all()
        w.net.down()


def namespace_of(pid: int) -> str:
    """The network namespace ``pid`` runs in ('' for the machine's own)."""
    done = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def info(world, cli: Cli | None = None) -> dict:
    return (cli or world.cli).json("info", NAME, timeout=60)


def running(world, cli: Cli | None = None, epoch: int = 0) -> dict:
    """``squall info`` once the master (of ``epoch`` or later) and every worker run."""
    seen: dict = {}

    def check() -> bool:
        try:
            seen["info"] = i = info(world, cli)
        except (AssertionError, subprocess.TimeoutExpired):
            return False
        return (i["epoch"] >= epoch and i["master"]["state"] == "RUNNING" and bool(i["workers"])
                and all(w["state"] == "RUNNING" and w.get("pid") for w in i["workers"]))
    assert wait_for(check, 300, step=1.0), f"the topology did not run: {seen}"
    return seen["info"]


def worker_hosts(i: dict) -> list[str]:
    return [w["address"].split("//")[1].rsplit(":", 1)[0] for w in i["workers"]]


@pytest.mark.timeout(600)
def test_a_submit_through_nimbus_runs_on_three_other_hosts(world):
    a = world.net.addresses
    file = write_topology(world.root / "wordcount.py", world.out, world.root / "unused", "v1", rate=30,
                          workers=3, count_parallelism=3,
                          conf_extra={"topology.state.provider": "squall.state.redis.RedisStateProvider",
                                      "topology.state.provider.config": {"host": a["redis"], "port": 6379}})
    ok(world.cli("submit", str(file), "--name", NAME, timeout=400))
    i = running(world)
    hosts = worker_hosts(i)
    assert len(set(hosts)) == 3 and set(hosts) <= {a[h] for h in WORKER_HOSTS}, hosts
    assert namespace_of(i["master"]["pid"]) == world.net.namespace("nimbus-a")
    for w in i["workers"]:  # a bare Python on the shipped environment
        assert cmdline(w["pid"])[0] == world.python, cmdline(w["pid"])
    progress(world, more=60, timeout=120)
    assert_exact(world)


def test_the_ui_and_metrics_answer_another_host(world):
    a = world.net.addresses
    # the client's host is not the leader's: it reaches the UI only through the leader's address
    with urllib.request.urlopen(f"http://{a['nimbus-a']}:{NIMBUS_PORT}/", timeout=10) as resp:
        assert resp.status == 200 and b"<html" in resp.read().lower()
    with urllib.request.urlopen(f"http://{a['nimbus-a']}:{NIMBUS_PORT}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    assert f'topology="{NAME}"' in text and "squall_topology_workers" in text
    # another server host (a Worker's) reaches it too, at its address; that host's own
    # loopback is its own, with nothing on Nimbus's port
    url = f"http://{a['nimbus-a']}:{NIMBUS_PORT}/metrics"
    probe = (f"import socket, urllib.request\n"
             f"print(urllib.request.urlopen({url!r}, timeout=10).status)\n"
             f"try:\n    socket.create_connection(('127.0.0.1', {NIMBUS_PORT}), timeout=2); print('open')\n"
             f"except OSError:\n    print('refused')\n")
    done = subprocess.run(world.net.command("w1", [shutil.which("python3") or "python3", "-c", probe]),
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["200", "refused"], (done.stdout, done.stderr)
    assert CLIENT not in a.values()  # the client's host is none of the servers'


@pytest.mark.timeout(400)
def test_a_sigkilled_worker_comes_back_on_its_host_or_another(world):
    before = running(world)
    spout = before["components"]["sentences"]["tasks"][0]
    victim = next(w for w in before["workers"] if spout not in w["tasks"])
    os.kill(victim["pid"], signal.SIGKILL)
    seen: list[dict] = []
    assert wait_for(lambda: seen.append(_back(world, victim) or {}) or seen[-1], 240, step=1.0), (
        f"worker {victim['worker']} not back")
    assert cmdline(seen[-1]["pid"])[0] == world.python, "the restarted worker left the shipped environment"
    progress(world, more=40, timeout=120)
    assert_exact(world)


def _back(world, victim: dict) -> dict | None:
    try:
        w = info(world)["workers"][victim["worker"]]
    except (AssertionError, subprocess.TimeoutExpired):
        return None
    return w if w["state"] == "RUNNING" and w.get("pid") not in (None, victim["pid"]) else None


@pytest.mark.timeout(400)
def test_a_killed_worker_daemon_sends_its_worker_to_the_spare_host(world):
    a = world.net.addresses
    before = running(world)
    spout = before["components"]["sentences"]["tasks"][0]
    victim = next(w for w in before["workers"] if spout not in w["tasks"])
    host = next(h for h in WORKER_HOSTS if a[h] == worker_hosts({"workers": [victim]})[0])
    world.spark.kill(host)
    seen: list[dict] = []
    assert wait_for(lambda: seen.append(_back(world, victim) or {}) or seen[-1], 300, step=1.0), (
        f"worker {victim['worker']} did not come back after the Worker of {host} died")
    moved = worker_hosts({"workers": [seen[-1]]})[0]
    assert moved != a[host] and moved in {a[h] for h in WORKER_HOSTS}, moved
    progress(world, more=40, timeout=120)
    assert_exact(world)


@pytest.mark.timeout(600)
def test_the_standby_on_another_host_relaunches_the_topology_when_the_leaders_host_dies(world):
    a = world.net.addresses
    before = running(world)
    progress(world, more=20)
    # the leader's host goes: Nimbus, its topology master (the driver), its disk
    world.a.kill(signal.SIGKILL)
    os.killpg(os.getpgid(before["master"]["pid"]), signal.SIGKILL)
    shutil.rmtree(world.home_a / "blobs")
    took = world.b.wait_leader(timeout=60)
    print(f"standby leads {took:.1f}s after the SIGKILL")
    cli = Cli(world.b.url, world.home_b, world.root)
    after = running(world, cli, epoch=before["epoch"] + 1)
    assert namespace_of(after["master"]["pid"]) == world.net.namespace("nimbus-b")
    assert set(worker_hosts(after)) <= {a[h] for h in WORKER_HOSTS}
    assert {cmdline(w["pid"])[0] for w in after["workers"]} == {world.python}
    world.cli = cli
    progress(world, more=40, timeout=180)
    assert_exact(world)
    assert len(R.acked(world.out)) > 0


EO_N = 300  # sentences of the exactly-once word count: 1200 words


def eo_wordcount(redis_host: str, out: Path, name: str):
    """``tests.spark.eo_topology``'s word count with its state and sink on ``redis_host``."""
    from squall import Config, Fields, TopologyBuilder
    from squall.connectors.redis import RedisStreamBolt
    from tests.spark import eo_topology as eo

    b = TopologyBuilder()
    b.set_spout("source", eo.SentenceSource(EO_N, str(out), 60.0), 2)
    b.set_bolt("split", eo.SplitWords(), 2).shuffle_grouping("source")
    b.set_bolt("count", eo.CountWords(), 2).fields_grouping("split", Fields("word"))
    b.set_bolt("sink", RedisStreamBolt(name, host=redis_host, port=6379), 2).shuffle_grouping("count")
    conf = Config()
    conf.set_num_workers(3)
    conf.set_message_timeout_secs(5)
    conf.set_max_spout_pending(200)
    conf.update({"topology.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 300,
                 "topology.state.provider": "squall.state.redis.RedisStateProvider",
                 "topology.state.provider.config": {"host": redis_host, "port": 6379}})
    return conf, b.create_topology()


@pytest.mark.timeout(600)
def test_exactly_once_with_redis_on_its_own_host_through_a_worker_kill(world, tmp_path):
    from collections import Counter

    from squall.client.remote import submit_topology
    from squall.connectors.redis import connect
    from squall.testing.invariants import check
    from tests.integration.test_stateful import committed_counts
    from tests.spark import eo_topology as eo

    world.cli("kill", NAME, "--wait", "0", timeout=120)  # if it runs: its cores go to this topology
    redis_host, name = world.net.addresses["redis"], "eo-hosts"
    conf, topology = eo_wordcount(redis_host, tmp_path, name)
    leader = f"{world.a.url},{world.b.url}"  # whichever leads (the standby, after the failover test)
    os.environ["SQUALL_TOKEN"] = TOKEN  # submit_topology reads it there
    try:
        submit_topology(name, {**conf, "squall.nimbus.url": leader}, topology, timeout=400)
    finally:
        del os.environ["SQUALL_TOKEN"]
    eo_cli = Cli(leader, world.home_a, world.root)
    total = EO_N * eo.WORDS_PER

    def sink() -> list[tuple[int, int]]:
        client = connect(redis_host, 6379, 0, None, 5.0)
        try:
            return [(int(f["place"]), int(f["id"])) for _, f in client.xrange(name)]
        finally:
            client.close()

    def acked() -> int:
        return len(set(eo.read_pairs(str(tmp_path), "acked")))
    try:
        assert wait_for(lambda: acked() >= total // 4, 180, step=0.5), f"{acked()} words acked"
        i = eo_cli.json("info", name, timeout=60)
        assert {w["state"] for w in i["workers"]} == {"RUNNING"}
        os.kill(i["workers"][-1]["pid"], signal.SIGKILL)
        assert wait_for(lambda: acked() >= total and len(sink()) >= total
                        and sum(committed_counts(conf, name).values()) >= total, 300, step=1.0), (
            f"words acked, in the sink, counted: {acked()}, {len(sink())}, "
            f"{sum(committed_counts(conf, name).values())} of {total}")
        time.sleep(1.0)  # three checkpoint intervals: nothing more may arrive
        pairs = sink()
    finally:
        eo_cli("kill", name, "--wait", "0", timeout=120)
    (tmp_path / "seen-0-sink.txt").write_text("".join(f"{p} {i}\n" for p, i in pairs))
    report = check(str(tmp_path), eo.WORDS_PER, EO_N)
    assert report.lost == [] and report.unacked == [] and report.duplicates == 0, str(report)
    assert report.failed == 0, f"spout fail called in exactly-once mode: {report}"
    assert dict(Counter(committed_counts(conf, name))) == eo.expected_counts(EO_N)


@pytest.mark.timeout(400)
def test_a_kafka_topology_reads_the_broker_on_its_own_host_with_the_client_squall_shipped(world, tmp_path):
    from squall import Config, TopologyBuilder
    from squall.client.remote import submit_topology
    from squall.connectors.kafka import FirstPollOffsetStrategy, KafkaSpout, KafkaSpoutConfig
    from tests.nimbus.hosts_topology import RecordValues

    world.kafka.create_topic("events", 2)
    values = [f"event-{i}".encode() for i in range(200)]
    world.kafka.produce("events", values)
    spout = KafkaSpout(KafkaSpoutConfig(world.kafka.bootstrap, ["events"], group_id="hosts",
                                        first_poll_offset_strategy=FirstPollOffsetStrategy.EARLIEST))
    b = TopologyBuilder()
    b.set_spout("events", spout, 1)
    b.set_bolt("record", RecordValues(str(tmp_path)), 2).shuffle_grouping("events")
    conf = Config()
    conf.set_num_workers(2)
    name = "kafka-hosts"
    os.environ["SQUALL_TOKEN"] = TOKEN
    try:
        submit_topology(name, {**conf, "squall.nimbus.url": world.cli.url}, b.create_topology(), timeout=300)
    finally:
        del os.environ["SQUALL_TOKEN"]

    def seen() -> set[str]:
        files = tmp_path.glob("kafka-[0-9]*.txt")
        lines = [line.split() for f in files for line in f.read_text().splitlines()]
        return {parts[1] for parts in lines if len(parts) == 2}
    try:
        assert wait_for(lambda: len(seen()) >= len(values), 180, step=0.5), f"{len(seen())} records read"
    finally:
        world.cli("kill", name, "--wait", "0", timeout=120)
    assert seen() == {v.decode() for v in values}
    libs = [f.read_text() for f in tmp_path.glob("kafka-lib-*.txt")]
    assert libs and all("/squall-env/site-packages/confluent_kafka/" in lib for lib in libs), libs
