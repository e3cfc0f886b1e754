"""Kafka in -> a bolt -> Kafka out, shared by the Kafka tests."""

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


def build(bootstrap: str, spout_tasks: int = 2, relay: Relay | None = None, out: str = "out",
          **kwargs: Any):
    b = TopologyBuilder()
    b.set_spout("in", KafkaSpout(spout_config(bootstrap, **kwargs)), spout_tasks)
    b.set_bolt("relay", relay or Relay(), 2).shuffle_grouping("in")
    b.set_bolt("out", KafkaBolt(bootstrap, topic=out), 2).shuffle_grouping("relay")
    return b.create_topology()
