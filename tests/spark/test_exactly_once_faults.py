"""Exactly-once on Spark (issue 29, RELIABILITY C2 and S1): the word count of ``eo_topology``
(a seekable source -> split -> counts in Redis state -> ``RedisStreamBolt``) under random
SIGKILLs of squall workers, on a standalone cluster of two hosts on one machine (Spark Workers
on 127.0.0.2 and 127.0.0.3) with a real redis-server holding state and sink.

``topology.guarantee: exactly_once``: in each of 20 seeded runs the committed counts equal
the source's exactly and the sink's stream holds every word of every sentence once: nothing
lost, nothing duplicated (``squall.testing.invariants``), and no spout ``fail``. The same
topology in ``at_least_once`` under the same kind of faults counts some words twice, so the
test tells the two modes apart.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from squall.testing.invariants import Report, check
from tests.integration.test_stateful import committed_counts
from tests.redis_server import RedisServer
from tests.spark import eo_topology as eo
from tests.spark.test_supervisor_faults import Hosts, start_cluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]
N = 900  # sentences: 3600 words
RATE = 150.0  # sentences per second per spout task (2 tasks): about 3 s of stream
SEEDS = range(20)


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("eo-redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def alive_hosts(ui: str) -> list[str]:
    """Hosts of the Workers the master lists alive ([] while its UI is not up, or answers
    with something else than JSON: it once served an HTML page at /json while starting)."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"{ui}/json", timeout=2) as resp:
            return [w["host"] for w in json.load(resp).get("workers", []) if w.get("state") == "ALIVE"]
    except (OSError, ValueError):
        return []


class TwoHosts(Hosts):
    """``Hosts`` whose wait for a Worker tolerates a master UI still starting."""

    def add_worker(self, host: str, cores: int) -> None:
        self.workers[host] = self._start(
            f"worker-{host}", ["org.apache.spark.deploy.worker.Worker", self.url, "--host", host,
                               "--cores", str(cores), "--memory", "1g", "--webui-port", "0",
                               "--work-dir", str(self.work / host)], host)
        deadline = time.monotonic() + 120
        while host not in alive_hosts(self.ui):
            assert time.monotonic() < deadline, f"the Worker on {host} did not register; logs in {self.work}"
            time.sleep(0.3)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, spark_log_dir):
    """One SparkCluster on Workers at 127.0.0.2 and 127.0.0.3, shared by every run."""
    hosts = TwoHosts(tmp_path_factory.mktemp("eo-hosts"))
    try:
        for host in ("127.0.0.2", "127.0.0.3"):
            hosts.add_worker(host, 2)
        c = start_cluster(hosts, spark_log_dir, 4)
        try:
            yield c
        finally:
            c.shutdown()
    finally:
        hosts.close()


def stream_pairs(redis: RedisServer, stream: str) -> list[tuple[int, int]]:
    """``(place, sentence id)`` of every entry of the sink's stream."""
    from squall.connectors.redis import connect

    client = connect(redis.host, redis.port, 0, None, 5.0)
    try:
        return [(int(f["place"]), int(f["id"])) for _, f in client.xrange(stream)]
    finally:
        client.close()


def running_workers(cluster, name: str) -> list[dict]:
    return [w for w in cluster.get_topology_info(name)["workers"] if w["state"] == "RUNNING" and w["pid"]]


class Run:
    """One submitted word count: kills its workers as the seed says, then waits for the end."""

    def __init__(self, cluster, redis: RedisServer, out: Path, guarantee: str, seed: int) -> None:
        self.cluster, self.redis, self.out = cluster, redis, out
        self.name = f"eo-{guarantee.split('_')[0]}-{seed}"
        self.rng = random.Random(seed)
        self.conf, topology = eo.wordcount(N, str(out), redis.port, self.name, guarantee=guarantee,
                                           rate=RATE)
        self.kills: list[str] = []
        self.t0 = time.monotonic()
        cluster.submit_topology(self.name, self.conf, topology)
        self.times = {"submit": time.monotonic() - self.t0}

    def words_acked(self) -> int:
        return len(set(eo.read_pairs(str(self.out), "acked")))

    def chaos(self, kills: int, timeout: float = 60.0) -> None:
        """SIGKILL a random running worker at each of ``kills`` random points of progress
        (shares of the words acked, so the kills fall mid-stream however slow the machine)."""
        at = sorted(self.rng.uniform(0.05, 0.7) for _ in range(kills))
        deadline = time.monotonic() + timeout
        for share in at:
            while self.words_acked() < share * N * eo.WORDS_PER:
                assert time.monotonic() < deadline, f"{self.name}: {self.words_acked()} words acked"
                time.sleep(0.05)
            workers = running_workers(self.cluster, self.name)
            while not workers:
                assert time.monotonic() < deadline, f"{self.name}: no worker came back"
                time.sleep(0.1)
                workers = running_workers(self.cluster, self.name)
            victim = self.rng.choice(sorted(workers, key=lambda w: w["worker"]))
            os.kill(victim["pid"], signal.SIGKILL)
            self.kills.append(f"worker {victim['worker']} at {self.words_acked()} words acked")
        self.times["chaos"] = time.monotonic() - self.t0

    def finish(self, timeout: float = 150.0) -> tuple[Report, Counter]:
        """Wait until every sentence is acked and the sink and counts stop changing; then
        kill the topology and compare what the sink and the state hold with the source."""
        total = N * eo.WORDS_PER
        deadline = time.monotonic() + timeout
        last = None
        try:
            while True:
                now = (self.words_acked(), len(stream_pairs(self.redis, self.name)),
                       sum(committed_counts(self.conf, self.name).values()))
                if now[0] >= total and now[1] >= total and now[2] >= total and now == last:
                    break
                assert time.monotonic() < deadline, (
                    f"{self.name} (kills: {self.kills}): after {timeout}s, words acked, in the sink, "
                    f"counted: {now} of {total}; errors: {self.errors()}")
                last = now
                time.sleep(1.0)  # stable across a second: three checkpoint intervals
        finally:
            self.times["done"] = time.monotonic() - self.t0
            self.cluster.kill_topology(self.name, wait_secs=0)
        seen = self.out / "seen-0-sink.txt"  # the sink's contents, as invariants.check reads them
        seen.write_text("".join(f"{p} {i}\n" for p, i in stream_pairs(self.redis, self.name)))
        return check(str(self.out), eo.WORDS_PER, N), Counter(committed_counts(self.conf, self.name))

    def errors(self) -> list[str]:
        return [e["message"][:200] for e in self.cluster.get_topology_info(self.name)["errors"]][-5:]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_exactly_once_under_worker_sigkills_loses_and_duplicates_nothing(cluster, redis, tmp_path, seed):
    run = Run(cluster, redis, tmp_path, "exactly_once", seed)
    run.chaos(kills=1 + seed % 2)
    report, counts = run.finish()
    print(f"seed {seed}, kills {run.kills}, seconds {run.times}: {report}")
    assert report.lost == [] and report.unacked == [], str(report)
    assert report.duplicates == 0, str(report)
    assert report.failed == 0, f"spout fail called in exactly-once mode: {report}"
    assert dict(counts) == eo.expected_counts(N), (
        f"committed counts minus the source's: {dict(counts - Counter(eo.expected_counts(N)))}, "
        f"missing: {dict(Counter(eo.expected_counts(N)) - counts)}")


@pytest.mark.timeout(400)
def test_at_least_once_under_the_same_faults_counts_some_words_twice(cluster, redis, tmp_path):
    extra = []
    for seed in range(3):
        out = tmp_path / str(seed)
        out.mkdir()
        run = Run(cluster, redis, out, "at_least_once", seed)
        run.chaos(kills=2)
        report, counts = run.finish()
        assert report.lost == [] and report.unacked == [], str(report)
        over = sum(counts.values()) - sum(eo.expected_counts(N).values())
        print(f"at-least-once seed {seed}, kills {run.kills}: {report}; counted {over} words too many")
        extra.append((report.duplicates, over))
    assert any(dup > 0 or over > 0 for dup, over in extra), extra
