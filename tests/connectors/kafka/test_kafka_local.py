"""KafkaSpout and KafkaBolt on LocalCluster against a real broker (Tansu)."""

import time
from collections import Counter

import pytest

from squall import Config, LocalCluster

from tests.connectors.kafka.topology import Relay, build


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def conf(**extra):
    c = Config()
    c.set_num_workers(2)
    c.update(extra)
    return c


def values(records):
    return Counter(m.value() for m in records)


def test_exactly_the_records_produced_arrive_with_3_partitions_over_2_spout_tasks(kafka_broker):
    kafka_broker.create_topic("in", 3)
    kafka_broker.create_topic("out", 1)
    sent = [f"record {i}".encode() for i in range(600)]
    kafka_broker.produce("in", sent, partition_of=lambda i: i % 3)
    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), build(kafka_broker.bootstrap))
        out = kafka_broker.read_all("out", expect=600)
    assert values(out) == Counter(v.upper() for v in sent)
