"""The Kafka spout and bolt never wait on the broker on their task's thread (issue 42 item
10): a broker that hangs (SIGSTOP: it accepts connections and answers nothing) must not hold
a seek, a partition's release, or a bolt's execute."""

from __future__ import annotations

import time
from typing import Any

import pytest

from squall.connectors.kafka import KafkaBolt, KafkaSpout
from squall.runtime import clock
from tests.connectors.kafka.topology import stepped_config
from tests.connectors.seeking import Context, opened, pump

EXACTLY_ONCE = {"topology.guarantee": "exactly_once"}


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


class Input(dict):
    """A tuple as the bolt reads it: fields by name."""

    fields = ("key", "message")


class Verdicts:
    """The bolt's collector: acks, fails, errors."""

    def __init__(self) -> None:
        self.acked: list = []
        self.failed: list = []
        self.errors: list[str] = []

    def ack(self, tup: Any) -> None:
        self.acked.append(tup)

    def fail(self, tup: Any) -> None:
        self.failed.append(tup)

    def report_error(self, error: BaseException) -> None:
        self.errors.append(str(error))


class BoltContext(Context):
    """Verdicts handed to the task's thread wait in ``soon`` (this test runs none of them)."""

    def __init__(self) -> None:
        super().__init__(component="out")
        self.soon: list = []

    def call_soon(self, fn: Any) -> None:
        self.soon.append(fn)


def test_a_seek_while_the_broker_hangs_does_not_wait_for_it(kafka_broker, sim):
    kafka_broker.create_topic("in", 1)
    kafka_broker.produce("in", [f"r{i}".encode() for i in range(10)])
    s = KafkaSpout(stepped_config(kafka_broker.bootstrap))
    out = opened(s, EXACTLY_ONCE)
    try:
        assert pump(s, out, 4, sim)
        position = s.position()
        assert pump(s, out, 10, sim)
        kafka_broker.pause()
        try:
            s.seek(position)  # the range check uses the watermarks read before: no broker call
            assert s.position() == position
        finally:
            kafka_broker.resume()
        start = len(out.emitted)
        assert pump(s, out, 10 + 6, sim)
        assert [m[2] for _, m in out.records(start)] == list(range(4, 10))
    finally:
        s.close()


def test_the_kafka_bolt_fails_inputs_at_once_when_the_producer_queue_is_full(kafka_broker):
    kafka_broker.create_topic("out", 1)
    bolt = KafkaBolt(kafka_broker.bootstrap, topic="out",
                     producer_props={"queue.buffering.max.messages": 5, "message.timeout.ms": 3000})
    verdicts, context = Verdicts(), BoltContext()
    bolt.prepare({}, context, verdicts)
    kafka_broker.pause()
    try:
        inputs = [Input(key=None, message=f"m{i}") for i in range(20)]
        for tup in inputs:
            bolt.execute(tup)
        # 5 fit the queue (their verdicts come from the delivery reports); the other 15 are
        # failed by execute itself, and reported once
        assert verdicts.failed == inputs[5:]
        assert verdicts.errors == [f"KafkaBolt 'out' (task {context.task_id}): the producer's queue is "
                                   f"full (queue.buffering.max.messages); failing inputs until the "
                                   f"broker takes records again"]
    finally:
        kafka_broker.resume()
        deadline = time.monotonic() + 10
        while len(context.soon) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        bolt.cleanup()
