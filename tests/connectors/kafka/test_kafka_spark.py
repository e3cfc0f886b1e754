"""KafkaSpout and KafkaBolt on the Spark runtime (SparkCluster local mode) against a real broker:
exact records, and a worker SIGKILLed mid-run resuming from the committed offsets."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import pytest

from squall import Config
from tests.connectors.kafka.topology import Relay, build, committed

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    pytest.importorskip("pyspark")
    from squall.spark import SparkCluster

    with SparkCluster(master="local[3]", log_dir=str(tmp_path_factory.mktemp("spark-logs"))) as cluster:
        cluster.start()
        yield cluster


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout}s"
        time.sleep(0.2)


def conf():
    c = Config()
    c.set_num_workers(2)
    c.set_max_spout_pending(50)
    c.set_message_timeout_secs(10)
    return c



def test_exactly_the_records_produced_arrive_on_spark_with_3_partitions_over_2_spout_tasks(
        spark_cluster, kafka_broker):
    kafka_broker.create_topic("in", 3)
    kafka_broker.create_topic("out", 1)
    sent = [f"record {i}".encode() for i in range(900)]
    kafka_broker.produce("in", sent, partition_of=lambda i: i % 3)
    spark_cluster.submit_topology("kafka-exact", conf(), build(kafka_broker.bootstrap))
    try:
        out = kafka_broker.read_all("out", expect=900, timeout=120)
        info = spark_cluster.get_topology_info("kafka-exact")
    finally:
        spark_cluster.kill_topology("kafka-exact", wait_secs=0)
    assert Counter(m.value() for m in out) == Counter(v.upper() for v in sent)
    assert len(info["components"]["in"]["tasks"]) == 2
    assert "kafkaOffset/totalSpoutLag" in info["components"]["in"]["metrics"]


def test_a_killed_worker_resumes_from_the_committed_offsets_with_bounded_duplicates(spark_cluster,
                                                                                   kafka_broker):
    n = 3000
    kafka_broker.create_topic("in", 3)
    kafka_broker.create_topic("out", 1)
    offsets = kafka_broker.produce("in", [f"r{i}".encode() for i in range(n)], partition_of=lambda i: i % 3)
    value_at = {(p, o): f"r{p + 3 * k}".encode() for p, offs in offsets.items() for k, o in enumerate(offs)}
    topology = build(kafka_broker.bootstrap, relay=Relay(delay=0.002))
    spark_cluster.submit_topology("kafka-kill", conf(), topology)
    try:
        info = spark_cluster.get_topology_info("kafka-kill")
        spouts = set(info["components"]["in"]["tasks"])
        victim = next(w for w in info["workers"] if set(w["tasks"]) & spouts)
        wait_until(lambda: sum(max(0, v) for v in committed(kafka_broker, "in", 3).values()) >= 600, 120,
                   "600 records committed")
        at_kill = committed(kafka_broker, "in", 3)
        assert sum(at_kill.values()) < n, "the run finished before the kill: slow it down"
        os.kill(victim["pid"], signal.SIGKILL)
        wait_until(lambda: (lambda w: w["state"] == "RUNNING" and w["pid"] not in (None, victim["pid"]))(
            spark_cluster.get_topology_info("kafka-kill")["workers"][victim["worker"]]), 90,
            "the killed worker's return")
        wait_until(lambda: committed(kafka_broker, "in", 3) == {p: len(o) for p, o in offsets.items()}, 240,
                   "every offset committed")
        out = kafka_broker.read_all("out", expect=n, timeout=30)
    finally:
        spark_cluster.kill_topology("kafka-kill", wait_secs=0)
    got = Counter(m.value() for m in out)
    assert set(got) == {v.upper() for v in value_at.values()}, f"{n - len(got)} records lost"
    duplicates = {v for v, c in got.items() if c > 1}
    # a record committed before the kill is never read again: duplicates are uncommitted ones
    committed_before = {value_at[(p, o)].upper() for p, upto in at_kill.items() for o in range(max(0, upto))}
    assert not duplicates & committed_before
    print(f"killed worker {victim['worker']} at {sum(at_kill.values())}/{n} committed: "
          f"{sum(got.values()) - len(got)} duplicate records")
