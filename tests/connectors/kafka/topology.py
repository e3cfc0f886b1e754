"""Kafka in -> a bolt -> Kafka out, and reading a group's commits: shared by the Kafka tests."""

from __future__ import annotations

import time
from typing import Any

from squall import Bolt, Fields, TopologyBuilder
from squall.connectors.kafka import KafkaBolt, KafkaSpout, KafkaSpoutConfig, RetryExponentialBackoff


class Relay(Bolt):
    """Emits key "n" and message = the record's value upper-cased; fails values listed in ``poison``
    while they have failed fewer than ``poison_times`` times in this task."""

    def __init__(self, poison: tuple = (), poison_times: int = 10**9, delay: float = 0.0) -> None:
        self.poison, self.poison_times, self.delay = set(poison), poison_times, delay

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        self.failed: dict[bytes, int] = {}

    def execute(self, tup: Any) -> None:
        value = tup["value"]
        if value in self.poison and self.failed.get(value, 0) < self.poison_times:
            self.failed[value] = self.failed.get(value, 0) + 1
            self.collector.fail(tup)
            return
        if self.delay:
            time.sleep(self.delay)
        self.collector.emit([tup["key"], value.upper()], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("key", "message"))


def spout_config(bootstrap: str, topic: str = "in", **kwargs: Any) -> KafkaSpoutConfig:
    kwargs.setdefault("offset_commit_period_ms", 200)
    kwargs.setdefault("partition_refresh_period_ms", 500)
    kwargs.setdefault("retry", RetryExponentialBackoff(0, 2, None, 1000))
    kwargs.setdefault("group_id", "g")
    return KafkaSpoutConfig(bootstrap, [topic], **kwargs)


def stepped_config(bootstrap: str, topic: str = "in", **kwargs: Any) -> KafkaSpoutConfig:
    """``spout_config`` emitting one record per ``next_tuple``: a hand-driven test stops at an
    exact record count (a call otherwise emits every record at hand)."""
    kwargs.setdefault("max_records_per_next_tuple", 1)
    return spout_config(bootstrap, topic, **kwargs)


def build(bootstrap: str, spout_tasks: int = 2, relay: Relay | None = None, out: str = "out",
          spout: KafkaSpout | None = None, relay_tasks: int = 2, out_tasks: int = 2, **kwargs: Any):
    """Spout "in" (``spout``, or one of ``spout_config(bootstrap, **kwargs)``) -> "relay" -> "out"."""
    b = TopologyBuilder()
    b.set_spout("in", spout or KafkaSpout(spout_config(bootstrap, **kwargs)), spout_tasks)
    b.set_bolt("relay", relay or Relay(), relay_tasks).shuffle_grouping("in")
    b.set_bolt("out", KafkaBolt(bootstrap, topic=out), out_tasks).shuffle_grouping("relay")
    return b.create_topology()


def committed(broker: Any, topic: str = "in", partitions: int = 1, group: str = "g") -> dict[int, int]:
    """The offset ``group`` committed for each of ``topic``'s first ``partitions`` partitions
    (negative: nothing committed)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as KTP

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        got = c.committed([KTP(topic, p) for p in range(partitions)], timeout=5)
        return {k.partition: k.offset for k in got}
    finally:
        c.close()
