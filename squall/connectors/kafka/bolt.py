"""``KafkaBolt``: tuples to a Kafka topic (storm-kafka-client's ``KafkaBolt``).

Key and message come from fields (Storm's ``FieldNameBasedTupleToKafkaMapper``, "key" and
"message" by default), the topic is fixed or read from a field. An input is acked only once
the broker confirmed its record (failed if delivery failed, so the spout replays it), or at
once with ``fire_and_forget``; failed at once when the producer's queue is full, rather than
waiting for room. The producer is idempotent (``enable.idempotence``) unless
``producer_props`` says otherwise. The producer's delivery reports are served by a thread of the
bolt's own and handed to the task with ``context.call_soon``, so the task never waits on the
broker.

Exactly-once: the bolt does not follow checkpoints (``follows_checkpoints = False``), so a
topology with ``topology.guarantee: exactly_once`` that writes to Kafka through it is refused.
Its records would need a Kafka transaction committed at each checkpoint commit; the test
broker (Tansu 0.6) takes transactions but leaves the open transaction of a killed producer
visible to ``read_committed`` readers after a new producer with the same
``transactional.id`` starts, so such a mode could not be shown to survive a SIGKILL here
(docs/connectors.md, Guarantees).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from squall.api.components import Bolt, OutputFieldsDeclarer
from squall.api.tuple import Tuple
from squall.connectors.kafka.client import import_client

log = logging.getLogger("squall.connectors.kafka")

SERVE_S = 0.05  # how long the delivery thread waits on the producer per call


class KafkaDeliveryError(RuntimeError):
    """The broker did not take a record: its input tuple is failed."""


def _as_bytes(name: str, field: str, value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{name}: the {what} (field {field!r}) must be bytes or str, got "
                    f"{type(value).__name__} {value!r:.60}")


class KafkaBolt(Bolt):
    """Writes each input as one record; acks after the broker confirmed it."""

    # writes go out at once, not at checkpoint commits: exactly-once refuses this bolt
    follows_checkpoints = False

    def __init__(self, bootstrap_servers: str, topic: str | None = None, *, topic_field: str | None = None,
                 key_field: str = "key", message_field: str = "message", fire_and_forget: bool = False,
                 producer_props: dict[str, Any] | None = None) -> None:
        if (topic is None) == (topic_field is None):
            raise ValueError("KafkaBolt: give either topic or topic_field, not "
                             f"{'both' if topic is not None else 'neither'}")
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
            raise ValueError(f"KafkaBolt: bootstrap_servers must be 'host:port[,host:port]', "
                             f"got {bootstrap_servers!r}")
        self.bootstrap_servers, self.topic, self.topic_field = bootstrap_servers, topic, topic_field
        self.key_field, self.message_field = key_field, message_field
        self.fire_and_forget = bool(fire_and_forget)
        self.producer_props = dict(producer_props or {})

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """A sink: no output."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Create the producer and start the thread that serves its delivery reports."""
        ck = import_client()
        self.collector, self.context = collector, context
        self.name = f"KafkaBolt {context.component_id!r} (task {context.task_id})"
        # idempotence: librdkafka's retries then neither duplicate nor reorder a record
        self.producer = ck.Producer({"bootstrap.servers": self.bootstrap_servers, "enable.idempotence": True,
                                     "error_cb": self._on_client_error, **self.producer_props})
        self._down: str | None = None
        self._full = False  # the producer's queue was full (reported once)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="kafka-bolt-deliveries", daemon=True)
        self._thread.start()

    def execute(self, tup: Tuple) -> None:
        """Send the tuple's record; the delivery report acks or fails the tuple."""
        topic = self.topic if self.topic is not None else tup[str(self.topic_field)]
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"{self.name}: the topic (field {self.topic_field!r}) must be a "
                            f"non-empty str, got {topic!r:.60}")
        key = tup[self.key_field] if self.key_field in tup.fields else None
        value = _as_bytes(self.name, self.message_field, tup[self.message_field], "message")
        key = _as_bytes(self.name, self.key_field, key, "key")
        callback = None if self.fire_and_forget else (lambda err, msg, tup=tup: self._delivered(tup, err))
        try:
            self.producer.produce(topic, value=value, key=key, on_delivery=callback)
        except BufferError:
            # the producer's queue is full (the broker is slow or down): waiting for room
            # could hold the worker for message.timeout.ms, so the input fails now and the
            # spout replays it (reported once until a record is delivered again)
            if not self._full:
                self._full = True
                self.collector.report_error(KafkaDeliveryError(
                    f"{self.name}: the producer's queue is full (queue.buffering.max.messages); "
                    f"failing inputs until the broker takes records again"))
            self.collector.fail(tup)
            return
        if self.fire_and_forget:
            self.collector.ack(tup)

    def _delivered(self, tup: Tuple, error: Any) -> None:
        # on the delivery thread: hand the verdict to the task's own thread
        self.context.call_soon(lambda: self._verdict(tup, error))

    def _verdict(self, tup: Tuple, error: Any) -> None:
        if error is None:
            self._down = None
            self._full = False
            self.collector.ack(tup)
            return
        self.collector.report_error(KafkaDeliveryError(f"{self.name}: delivery failed: {error}"))
        self.collector.fail(tup)

    def _on_client_error(self, error: Any) -> None:
        # on the delivery thread too; one report per outage
        if self._down is None:
            self._down = str(error)
            self.context.call_soon(lambda: self.collector.report_error(ConnectionError(
                f"{self.name}: Kafka at {self.bootstrap_servers} cannot be reached: {error}")))

    def _serve(self) -> None:
        while not self._stop.is_set():
            self.producer.poll(SERVE_S)

    def cleanup(self) -> None:
        """Wait for the records in flight (up to 10 s), then stop the delivery thread."""
        left = self.producer.flush(10)
        if left:
            log.warning("%s: %d records not confirmed at cleanup", self.name, left)
        self._stop.set()
        self._thread.join(timeout=1)
