"""KafkaSpout in exactly-once topologies on LocalCluster against a real broker (Tansu), on
simulated time: what the checkpointed position may count as done (issue 42)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from squall import Bolt, Config, Fields, LocalCluster, StatefulBolt, TopologyBuilder
from squall.api.errors import FailedException
from squall.connectors.kafka import KafkaSpout, KafkaSpoutConfig, RetryExponentialBackoff
from squall.state import memory
from squall.testing import simulated_time
from tests.connectors.kafka.topology import committed
from tests.integration.eo_components import committed as committed_state

NAME = "eo-kafka"
STEP = 0.1  # simulated seconds per step


class Switches:
    """What the run's components do now (this process: LocalCluster)."""

    lock = threading.Lock()
    poison: set[int] = set()       # offsets the translator raises on
    fail_once: set[bytes] = set()  # values the gate bolt raises FailedException on, once


class Translator:
    """The default record fields; raises on the offsets in ``Switches.poison``."""

    def __call__(self, record: Any) -> list:
        if record.offset() in Switches.poison:
            raise ValueError(f"poison record at offset {record.offset()}")
        return [record.partition(), record.offset(), record.value()]

    def declare(self, declarer: Any) -> None:
        declarer.declare(Fields("partition", "offset", "value"))


class Gate(Bolt):
    """Passes records on; raises ``FailedException`` once on each value in ``Switches.fail_once``."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        with Switches.lock:
            hit = tup["value"] in Switches.fail_once
            Switches.fail_once.discard(tup["value"])
        if hit:
            raise FailedException(f"planned failure on {tup['value']!r}")
        self.collector.emit(list(tup.values), anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("partition", "offset", "value"))


class OffsetSink(StatefulBolt):
    """An aligned sink: how often each ``partition:offset`` reached it, in its checkpointed state."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        key = f"{tup['partition']}:{tup['offset']}"
        self.state.put(key, self.state.get(key, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def eo_conf(**extra: Any) -> Config:
    c = Config()
    c.set_num_workers(2)
    c.update({"topology.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 200,
              "topology.state.provider": "squall.state.memory.InMemoryStateProvider",
              "topology.message.timeout.secs": 10, **extra})
    return c


def sink_state() -> dict:
    return committed_state(f"{NAME}/sink/0")


def test_a_record_whose_translator_raised_is_never_counted_done_by_a_checkpoint(kafka_broker):
    # in-0 offset 5's translator raises (a retry every >= 5 s) while checkpoints commit: the
    # partition's later records wait behind it (sent before it, they would commit and come
    # again after the next rollback). A failure on in-1 then rolls everything back to the
    # committed position: offset 5 must come again, and once its translator works every
    # record is counted once
    kafka_broker.create_topic("in", 2)
    kafka_broker.produce("in", [f"r{i}".encode() for i in range(10)], partition_of=lambda i: 0)
    memory.clear()
    Switches.poison, Switches.fail_once = {5}, set()
    config = KafkaSpoutConfig(kafka_broker.bootstrap, ["in"], group_id="g", record_translator=Translator(),
                              retry=RetryExponentialBackoff(initial_delay_ms=5000),
                              offset_commit_period_ms=200, partition_refresh_period_ms=500)
    b = TopologyBuilder()
    b.set_spout("source", KafkaSpout(config), 1)
    b.set_bolt("gate", Gate(), 1).shuffle_grouping("source")
    b.set_bolt("sink", OffsetSink(), 1).shuffle_grouping("gate")
    seen_commits = []
    early = set()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, eo_conf(), b.create_topology())
        for _ in range(300):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            seen_commits.append(committed(kafka_broker)[0])
            if {f"0:{o}" for o in range(5)} <= set(sink_state()):
                break
        cluster.advance_time(1.0, increment=STEP, quiet_timeout=0.5)  # more checkpoints commit
        with Switches.lock:
            Switches.fail_once.add(b"s0")
        kafka_broker.produce("in", [b"s0"], partition_of=lambda i: 1)  # its failure makes a ROLLBACK
        for _ in range(50):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            seen_commits.append(committed(kafka_broker)[0])
        early = set(sink_state()) & {f"0:{o}" for o in range(5, 10)}
        Switches.poison.clear()
        for _ in range(300):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            if {f"0:{o}" for o in range(10)} | {"1:0"} <= set(sink_state()):
                break
        cluster.advance_time(1.0, increment=STEP, quiet_timeout=0.5)
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    state = sink_state()
    assert Switches.fail_once == set(), "the planned failure did not strike"
    assert early == set(), early  # held behind offset 5 while it was stuck
    assert set(state) == {f"0:{o}" for o in range(10)} | {"1:0"}, (sorted(state), errors)
    assert sorted(k for k, n in state.items() if n > 1) == [], (state, errors)
    # while offset 5 was not out of the spout, the group's commit never passed it
    assert max(seen_commits) <= 5, seen_commits


class KeyTranslator:
    """``[key]``: "topic:partition:offset" of the record."""

    def __call__(self, record: Any) -> list:
        return [f"{record.topic()}:{record.partition()}:{record.offset()}"]

    def declare(self, declarer: Any) -> None:
        declarer.declare(Fields("key"))


class KeySink(StatefulBolt):
    """How often each key reached it: in its checkpointed state (exactly-once), or in ``SEEN``."""

    SEEN: dict[str, int] = {}

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        self.state: Any = None

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        key = tup["key"]
        if self.state is not None:
            self.state.put(key, self.state.get(key, 0) + 1)
        else:
            with Switches.lock:
                KeySink.SEEN[key] = KeySink.SEEN.get(key, 0) + 1
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class PlainKeySink(Bolt):
    """``KeySink`` for at-least-once (a plain bolt)."""

    prepare = KeySink.prepare
    execute = KeySink.execute

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def produce_slowly(broker: Any, topic: str, n: int, partitions: int, secs: float) -> threading.Thread:
    """Produce ``n`` records to ``topic`` spread over ``secs`` real seconds, on a thread."""

    def run() -> None:
        for i in range(0, n, 10):
            broker.produce(topic, [f"{topic}{j}".encode() for j in range(i, min(n, i + 10))],
                           partition_of=lambda j, i=i: (i + j) % partitions)
            time.sleep(secs * 10 / n)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_partition_move_with_the_default_commit_period_repeats_nothing(kafka_broker, guarantee):
    # pattern t-.*: t-b's partitions [b0, b1] over 2 tasks are {b0} and {b1}; a topic t-a makes
    # them [a0, b0, b1]: {a0, b1} and {b0}, so b0 and b1 change tasks while their records fly
    # (produced all along). The message timeout (10 s) is below the default commit period
    # (30 s): the new owner must not give up waiting before the old one releases
    kafka_broker.create_topic("t-b", 2)
    memory.clear()
    KeySink.SEEN = {}
    config = KafkaSpoutConfig(kafka_broker.bootstrap, topic_pattern=r"t-.*", group_id="g",
                              record_translator=KeyTranslator(), partition_refresh_period_ms=300)
    b = TopologyBuilder()
    b.set_spout("source", KafkaSpout(config), 2)
    b.set_bolt("sink", KeySink() if guarantee == "exactly_once" else PlainKeySink(), 1) \
        .shuffle_grouping("source")
    c = eo_conf(**{"topology.guarantee": guarantee, "topology.state.checkpoint.interval.ms": 1000})
    want = {f"t-b:{p}:{o}" for p in (0, 1) for o in range(200)} | {f"t-a:0:{i}" for i in range(40)}

    def seen() -> dict:
        return sink_state() if guarantee == "exactly_once" else dict(KeySink.SEEN)

    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, c, b.create_topology())
        producer = produce_slowly(kafka_broker, "t-b", 400, 2, 4.0)
        deadline = time.monotonic() + 90  # the broker's clients need real time
        moved_at = time.monotonic() + 1.5
        while not set(seen()) >= want and time.monotonic() < deadline:
            if moved_at is not None and time.monotonic() >= moved_at:
                kafka_broker.create_topic("t-a", 1)  # while t-b's records are in flight
                kafka_broker.produce("t-a", [f"a{i}".encode() for i in range(40)])
                moved_at = None
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            time.sleep(0.02)
        producer.join()
        cluster.advance_time(40, increment=0.5, quiet_timeout=2)  # past any handover timeout
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    got = seen()
    assert set(got) == want, (sorted(want - set(got))[:10], errors)
    assert sorted(k for k, n in got.items() if n > 1) == [], errors
