"""Exactly-once on Spark with a Kafka source (issue 42 item 8): a word count whose sentences
come from Kafka topics matching a pattern (``KafkaSpout``, 2 tasks) -> split -> counts in
Redis state -> ``RedisStreamBolt``, under SIGKILLs of squall workers and partition moves
(a topic that sorts first appears mid-run, so partitions change tasks while their records
fly), on ``SparkCluster`` local mode with a real broker (Tansu) and a real redis-server.

The spout keeps the default ``offset_commit_period_ms`` (30 s) with a message timeout of
10 s: a handover must not wait for the commit timer. In each seeded run the committed counts
equal the source's and the sink's stream holds every word of every sentence once: nothing
lost, nothing duplicated. A few seeds by default; every seed with ``SQUALL_FAULT_SEEDS=all``
(the variable ``make faults`` sets for the other fault loops).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from typing import Any

import pytest

from squall import Config, Fields, TopologyBuilder
from squall.connectors.kafka import KafkaSpout, KafkaSpoutConfig
from squall.connectors.redis import RedisStreamBolt
from tests.fault_seeds import fault_seeds
from tests.integration.test_stateful import committed_counts
from tests.kafka_broker import KafkaBroker
from tests.redis_server import RedisServer
from tests.spark import eo_topology as eo

pytestmark = [pytest.mark.spark, pytest.mark.slow]
N = 600  # sentences: 2400 words
ALL_SEEDS = range(10)
SEEDS = fault_seeds(len(ALL_SEEDS), default=3)


class SentenceOf:
    """A record's value is a sentence id: ``[id, sentence(id)]``."""

    def __call__(self, record: Any) -> list:
        i = int(record.value())
        return [i, eo.sentence(i)]

    def declare(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "sentence"))


class SlowSplit(eo.SplitWords):
    """``SplitWords`` taking 20 ms a sentence: the pipeline lags the input, so records are in
    flight whenever a partition moves (a move with nothing in flight is released at once)."""

    def execute(self, tup: Any) -> None:
        time.sleep(0.02)
        super().execute(tup)


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("eo-kafka-redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = KafkaBroker(tmp_path_factory.mktemp("eo-kafka-broker"))
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def cluster(spark_log_dir):
    pytest.importorskip("pyspark")
    from squall.spark import SparkCluster

    with SparkCluster(master="local[3]", log_dir=spark_log_dir) as c:
        c.start()
        yield c


def wordcount(bootstrap: str, prefix: str, redis_port: int, stream: str) -> tuple[Config, Any]:
    spout = KafkaSpout(KafkaSpoutConfig(bootstrap, topic_pattern=rf"{prefix}-.*", group_id=prefix,
                                        record_translator=SentenceOf(), partition_refresh_period_ms=1000))
    b = TopologyBuilder()
    b.set_spout("source", spout, 2)
    b.set_bolt("split", SlowSplit(), 2).shuffle_grouping("source")
    b.set_bolt("count", eo.CountWords(), 2).fields_grouping("split", Fields("word"))
    b.set_bolt("sink", RedisStreamBolt(stream, port=redis_port), 2).shuffle_grouping("count")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(10)
    conf.set_max_spout_pending(200)
    conf.update({"topology.guarantee": "exactly_once",
                 "topology.state.checkpoint.interval.ms": 300,
                 "topology.state.provider": "squall.state.redis.RedisStateProvider",
                 "topology.state.provider.config": {"host": "127.0.0.1", "port": redis_port}})
    return conf, b.create_topology()


def stream_pairs(redis: RedisServer, stream: str) -> list[tuple[int, int]]:
    """``(place, sentence id)`` of every entry of the sink's stream."""
    from squall.connectors.redis import connect

    client = connect(redis.host, redis.port, 0, None, 5.0)
    try:
        return [(int(f["place"]), int(f["id"])) for _, f in client.xrange(stream)]
    finally:
        client.close()


def feed(broker: KafkaBroker, prefix: str, plan: list[tuple[str, int, range]],
         secs: float) -> threading.Thread:
    """Produce each ``(topic, partitions, ids)`` of ``plan`` in turn, spread over ``secs``
    seconds; a topic is made just before its first record, except the first (made before the
    submit): a new topic sorting first moves the others' partitions between the spout's tasks."""
    chunks = [(topic, parts, ids[i:i + 20]) for topic, parts, ids in plan for i in range(0, len(ids), 20)]

    def run() -> None:
        made = {plan[0][0]}
        for topic, parts, ids in chunks:
            if topic not in made:
                broker.create_topic(f"{prefix}-{topic}", parts)
                made.add(topic)
            broker.produce(f"{prefix}-{topic}", [str(i).encode() for i in ids],
                           partition_of=lambda j, ids=ids, parts=parts: ids[j] % parts)
            time.sleep(secs / len(chunks))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def kill_workers(cluster: Any, name: str, rng: random.Random, kills: int, until: float) -> list[str]:
    """SIGKILL a random running worker ``kills`` times at random moments before ``until``."""
    done = []
    for at in sorted(rng.uniform(time.monotonic() + 2, until) for _ in range(kills)):
        while time.monotonic() < at:
            time.sleep(0.1)
        workers = [w for w in cluster.get_topology_info(name)["workers"]
                   if w["state"] == "RUNNING" and w.get("pid")]
        if not workers:
            continue
        victim = rng.choice(sorted(workers, key=lambda w: w["worker"]))
        try:
            os.kill(victim["pid"], signal.SIGKILL)
        except ProcessLookupError:
            continue
        done.append(f"worker {victim['worker']}")
    return done


@pytest.mark.timeout(400)
@pytest.mark.parametrize("seed", SEEDS)
def test_exactly_once_from_kafka_under_worker_sigkills_and_partition_moves(cluster, redis, broker, seed):
    rng = random.Random(seed)
    prefix, name = f"kf{seed}", f"eo-kafka-{seed}"
    conf, topology = wordcount(broker.bootstrap, prefix, redis.port, name)
    # "m" first; "b" and then "a" sort before it and appear mid-run: two rounds of moves
    cut1, cut2 = sorted(rng.sample(range(100, N - 100), 2))
    plan = [("m", 2, range(0, cut1)), ("b", 1, range(cut1, cut2)), ("a", 2, range(cut2, N))]
    broker.create_topic(f"{prefix}-m", 2)
    cluster.submit_topology(name, conf, topology)
    try:
        feeder = feed(broker, prefix, plan, secs=3.0)
        kills = kill_workers(cluster, name, rng, kills=1 + seed % 2, until=time.monotonic() + 6)
        feeder.join()
        total = N * eo.WORDS_PER
        deadline = time.monotonic() + 240
        last, changed = None, time.monotonic()
        while True:
            now = (len(stream_pairs(redis, name)), sum(committed_counts(conf, name).values()))
            if now == last and (min(now) >= total or time.monotonic() - changed > 40):
                break
            assert time.monotonic() < deadline, (
                f"{name} (kills: {kills}): in the sink, counted: {now} of {total}; errors: "
                f"{[e['message'][:200] for e in cluster.get_topology_info(name)['errors']][-5:]}")
            if now != last:
                last, changed = now, time.monotonic()
            time.sleep(1.0)
        errors = [e["message"][:200] for e in cluster.get_topology_info(name)["errors"]][-5:]
    finally:
        cluster.kill_topology(name, wait_secs=0)
    pairs = Counter(stream_pairs(redis, name))
    want = {(p, i) for i in range(N) for p in range(eo.WORDS_PER)}
    lost = sorted(want - set(pairs))
    duplicated = sorted(k for k, n in pairs.items() if n > 1)
    print(f"seed {seed}: kills {kills}; lost {len(lost)}, duplicated {len(duplicated)}")
    assert (lost[:10], duplicated[:10]) == ([], []), (kills, errors)
    assert dict(Counter(committed_counts(conf, name))) == eo.expected_counts(N), (kills, errors)
